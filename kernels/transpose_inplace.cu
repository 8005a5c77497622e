// In-place rectangular transpose by blocks: the kernels of transpose_inplace.py.
//
// An R x C row-major matrix with g = gcd(R, C), R = a*g, C = b*g, is an a x b grid of g x g
// blocks B[I][J].  Element (I*g + x, J*g + y) sits in "chunk" (I*g + x)*b + J (g contiguous
// elements: row x of block B[I][J]).  The transpose is
//   1. every block transposed in place (square_blocks, or the square kernel of transpose.cu when
//      the blocks are contiguous), after which chunk P = (I*g + x)*b + J holds row x of B[I][J]^T;
//   2. a permutation of whole chunks (chunk_save + chunk_cycles): chunk Q = (J*g + x)*a + I of
//      the result is chunk P = src(Q) = (I*g + x)*b + J of step 1.
// (When a == 1 the launcher runs step 2 first: the same permutation then makes every block
// contiguous for step 1.)  Both steps read and write every byte once: two passes in all.
//
// Step 2 follows the cycles of src: new[c_s] = old[c_{s+1}], c_{s+1} = src(c_s).  The host plans
// the cycles once per shape (transpose_inplace.py): a cycle of length <= seg is one work item
// (start, length) that keeps old[c_0] in a register for its last write; a longer one is cut into
// segments of at most seg steps (start, steps, slot, next slot) whose first chunks chunk_save
// copies to scratch beforehand, so that each segment reads the head of the next one from scratch.
// Every position is then read and written by one thread only, in program order: the threads
// need no barriers and no atomics.  A warp moves 32 consecutive words of a chunk, so every
// access is a coalesced run of 32 words; a thread issues the loads of D chain steps before it
// stores them (the chain's next positions are never written before they are read).

#include "tile.cuh"

#define CHAIN_D 8     // chain steps whose loads a thread keeps in flight
#define SQ_SIDE 32    // square_blocks: tile side in V x V element blocks
#define SQ_ROWS 8     // square_blocks: blockDim.y

// n / d for n < 2^31 by multiply-high (the host computes mul and shift; d == 1 has mul == 0).
__device__ __forceinline__ unsigned fast_div(unsigned n, unsigned mul, unsigned shift)
{
    return mul ? (__umulhi(n, mul) >> shift) : n;
}

struct ChunkSrc {
    unsigned a, ma, sa, g, mg, sg, b;
    // src(Q) = (I*g + x)*b + J for Q = (J*g + x)*a + I; every value < a*g*b < 2^31
    __device__ __forceinline__ unsigned operator()(unsigned q) const
    {
        const unsigned t = fast_div(q, ma, sa);
        const unsigned i = q - t * a;
        const unsigned j = fast_div(t, mg, sg);
        const unsigned x = t - j * g;
        return (i * g + x) * b + j;
    }
};

// scratch[slot] <- chunk start of every long item (item = (start, steps, slot, next slot)).
template <int W>
__global__ void __launch_bounds__(256)
chunk_save(const typename Raw<W>::t* __restrict__ data, typename Raw<W>::t* __restrict__ scratch,
           const int4* __restrict__ longs, unsigned n_long, unsigned wpc, unsigned slices)
{
    const unsigned lane = threadIdx.x & 31;
    const unsigned long long total = (unsigned long long)n_long * slices;
    const unsigned long long nwarps = ((unsigned long long)gridDim.x * blockDim.x) >> 5;
    for (unsigned long long w = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
         w < total; w += nwarps) {
        const unsigned item = (unsigned)(w / slices);
        const unsigned word = (unsigned)(w - (unsigned long long)item * slices) * 32 + lane;
        if (word < wpc) {
            const int4 it = longs[item];
            scratch[(unsigned long long)it.z * wpc + word] =
                data[(unsigned long long)(unsigned)it.x * wpc + word];
        }
    }
}

// Move every chunk along its cycle: items [0, n_single) are whole cycles (start, length), items
// [n_single, n_single + n_long) are segments (start, steps, slot, next slot) of longer ones.
template <int W>
__global__ void __launch_bounds__(256)
chunk_cycles(typename Raw<W>::t* data, const typename Raw<W>::t* __restrict__ scratch,
             const int2* __restrict__ singles, unsigned n_single,
             const int4* __restrict__ longs, unsigned n_long, unsigned wpc, unsigned slices,
             unsigned a, unsigned ma, unsigned sa, unsigned g, unsigned mg, unsigned sg, unsigned b)
{
    const ChunkSrc src = {a, ma, sa, g, mg, sg, b};
    typedef typename Raw<W>::t T;
    const unsigned lane = threadIdx.x & 31;
    const unsigned long long total = ((unsigned long long)n_single + n_long) * slices;
    const unsigned long long nwarps = ((unsigned long long)gridDim.x * blockDim.x) >> 5;
    for (unsigned long long w = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
         w < total; w += nwarps) {
        const unsigned item = (unsigned)(w / slices);
        const unsigned word = (unsigned)(w - (unsigned long long)item * slices) * 32 + lane;
        const bool live = word < wpc;
        // the value of the chain's last write: the cycle's own first chunk (kept in a register)
        // or the head of the next segment (saved to scratch by chunk_save)
        const bool single = item < n_single;
        unsigned cur, steps;
        const T* tail = scratch;
        T head;
        if (single) {
            const int2 it = singles[item];
            cur = (unsigned)it.x;
            steps = (unsigned)it.y;
            if (live) head = data[(unsigned long long)cur * wpc + word];
        } else {
            const int4 it = longs[item - n_single];
            cur = (unsigned)it.x;
            steps = (unsigned)it.y;
            tail += (unsigned long long)(unsigned)it.w * wpc + word;
        }
        for (unsigned s = 0; s < steps; s += CHAIN_D) {
            unsigned p[CHAIN_D] = {};
            T v[CHAIN_D];
            unsigned q = cur;
#pragma unroll
            for (int k = 0; k < CHAIN_D; ++k) {
                if (s + k < steps) {
                    q = src(q);
                    p[k] = q;
                    if (live) v[k] = (s + k + 1 < steps) ? data[(unsigned long long)q * wpc + word]
                                                         : (single ? head : *tail);
                }
            }
#pragma unroll
            for (int k = 0; k < CHAIN_D; ++k) {
                if (s + k < steps && live)
                    data[(unsigned long long)(k == 0 ? cur : p[k - 1]) * wpc + word] = v[k];
            }
            cur = p[CHAIN_D - 1];   // read only when another round follows (then it was set)
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Step 1 for strided blocks (a > 1 and b > 1): transpose every g x g block of the R x C matrix
// in place; one thread block swaps tile (ti, tj) with tile (tj, ti) of one block (as
// transpose_square_inplace in transpose.cu, with the matrix's row stride ld).  Tiles are
// (SQ_SIDE * V)^2 elements, moved as V-element words (V divides g and aligns the pointer).
// ------------------------------------------------------------------------------------------------

template <int ES, int V>
__global__ void __launch_bounds__(SQ_SIDE * SQ_ROWS)
square_blocks(typename Raw<ES>::t* data, long long g, long long ld, long long nblocks,
              long long b, long long tiles)
{
    typedef typename Raw<ES * V>::t Vec;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    Vec* sa = reinterpret_cast<Vec*>(smem_raw);
    Vec* sb = sa + SQ_SIDE * V * SQ_SIDE;
    const long long side = SQ_SIDE * V;
    const long long pairs = tiles * (tiles + 1) / 2;
    const long long total = pairs * nblocks;
    for (long long t = blockIdx.x; t < total; t += gridDim.x) {
        const long long blk = t / pairs;
        const long long idx = t - blk * pairs;
        const long long bi = blk / b, bj = blk - bi * b;
        // pair index -> (ti, tj), ti <= tj: row ti of the triangle starts at ti*tiles - ti(ti-1)/2
        const double tt = 2.0 * (double)tiles + 1.0;
        long long ti = (long long)((tt - sqrt(tt * tt - 8.0 * (double)idx)) * 0.5);
        if (ti < 0) ti = 0;
        if (ti > tiles - 1) ti = tiles - 1;
        while (ti > 0 && ti * tiles - ti * (ti - 1) / 2 > idx) --ti;
        while (ti + 1 < tiles && (ti + 1) * tiles - (ti + 1) * ti / 2 <= idx) ++ti;
        const long long tj = ti + (idx - (ti * tiles - ti * (ti - 1) / 2));
        typename Raw<ES>::t* base = data + bi * g * ld + bj * g;
        tile_load<ES, V, SQ_SIDE, SQ_ROWS>(base, sa, g, g, ld, ti * side, tj * side);
        if (ti != tj) tile_load<ES, V, SQ_SIDE, SQ_ROWS>(base, sb, g, g, ld, tj * side, ti * side);
        __syncthreads();
        tile_store<ES, V, SQ_SIDE, SQ_ROWS>(sa, base, g, g, ld, ti * side, tj * side);
        if (ti != tj) tile_store<ES, V, SQ_SIDE, SQ_ROWS>(sb, base, g, g, ld, tj * side, ti * side);
        __syncthreads();
    }
}
