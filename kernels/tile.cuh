// Tiles of a transpose through shared memory, shared by transpose.cu (out of place and square in
// place) and transpose_inplace.cu (the g x g blocks of a rectangular matrix, with a row stride).
//
// A tile is SIDE x SIDE blocks of V x V elements (SIDE * V elements a side).  tile_load: a
// thread loads the V rows of its blocks as V-element vectors, transposes each block in
// registers and writes the V vectors into shared memory laid out as the OUTPUT tile, its columns
// XOR-swizzled by (row / V) so that neither the scattered writes nor the row reads conflict on
// banks.  tile_store: after a barrier every warp writes whole output rows with vector stores.
// blockDim is SIDE x ROWS.  Elements are raw bytes: only their size ES (1-16) matters.
#pragma once

template <int B> struct Raw;
template <> struct Raw<1> { typedef unsigned char t; };
template <> struct Raw<2> { typedef unsigned short t; };
template <> struct Raw<4> { typedef unsigned int t; };
template <> struct Raw<8> { typedef uint2 t; };
template <> struct Raw<16> { typedef uint4 t; };

// Load tile (r0, c0) of a rows x cols matrix whose rows start ld elements apart into shared
// memory sm, laid out as the output tile.  rows and cols are multiples of V when V > 1.
template <int ES, int V, int SIDE, int ROWS>
__device__ __forceinline__ void tile_load(const typename Raw<ES>::t* in,
                                          typename Raw<ES * V>::t* sm, long long rows,
                                          long long cols, long long ld, long long r0,
                                          long long c0)
{
    typedef typename Raw<ES>::t T;
    typedef typename Raw<ES * V>::t Vec;
    union Pack { Vec v; T e[V]; };
    const int tx = threadIdx.x, ty = threadIdx.y;
    const long long vcols = cols / V;
    const long long vc = c0 / V + tx;
    const long long brows = rows / V;
    Pack p[SIDE / ROWS][V];
#pragma unroll
    for (int k = 0; k < SIDE / ROWS; ++k) {
        const long long br = r0 / V + ty + k * ROWS;
        if (br < brows && vc < vcols) {
#pragma unroll
            for (int e = 0; e < V; ++e)
                p[k][e].v = reinterpret_cast<const Vec*>(in + (br * V + e) * ld)[vc];
        }
    }
#pragma unroll
    for (int k = 0; k < SIDE / ROWS; ++k) {
        const int bi = ty + k * ROWS;
        const long long br = r0 / V + bi;
        if (br < brows && vc < vcols) {
#pragma unroll
            for (int f = 0; f < V; ++f) {
                Pack q;
#pragma unroll
                for (int e = 0; e < V; ++e) q.e[e] = p[k][e].e[f];
                // output row tx*V + f of the tile, vector column bi; swizzle key (row / V) == tx
                sm[(tx * V + f) * SIDE + (bi ^ tx)] = q.v;
            }
        }
    }
}

// Store the shared tile loaded from tile (r0, c0) of the rows x cols input into the cols x rows
// output, whose rows start ld elements apart (blockDim SIDE x ROWS).
template <int ES, int V, int SIDE, int ROWS>
__device__ __forceinline__ void tile_store(const typename Raw<ES * V>::t* sm,
                                           typename Raw<ES>::t* out, long long rows,
                                           long long cols, long long ld, long long r0,
                                           long long c0)
{
    typedef typename Raw<ES * V>::t Vec;
    const int tx = threadIdx.x, ty = threadIdx.y;
    const long long ovcols = rows / V;
    const long long ovc = r0 / V + tx;
#pragma unroll
    for (int k = 0; k < (SIDE * V) / ROWS; ++k) {
        const int orow = ty + k * ROWS;
        const long long og = c0 + orow;
        if (og < cols && ovc < ovcols)
            reinterpret_cast<Vec*>(out + og * ld)[ovc] =
                sm[orow * SIDE + (tx ^ ((orow / V) & (SIDE - 1)))];
    }
}
