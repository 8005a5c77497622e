// Tiled matrix transposes: out of place, in place for square matrices, and in place for
// rectangular matrices through the decomposition of Catanzaro, Keller and Garland ("A
// decomposition for in-place matrix transposition", PPoPP 2014).  Launched by transpose.py, which
// picks the kernel and its template parameters per element size and shape.
//
// Elements are moved as raw bytes: only the element size ES (1, 2, 4, 8 or 16) matters.
//
// Out of place / in place square ("tile" kernels).  A block moves one tile of SIDE x SIDE
// elements, SIDE = 32 * V.  The tile is cut into V x V element blocks; a thread loads the V rows
// of one block as V vectors of V elements (V * ES bytes each, so 1- and 2-byte elements travel in
// 4- to 8-byte words), transposes the V x V block in registers, and writes the V resulting
// vectors into a shared-memory tile laid out as the OUTPUT tile.  After a barrier every warp writes
// whole output rows with coalesced vector stores.  The shared tile is XOR-swizzled
// (column ^ (row / V)) so that both the scattered writes and the row reads are free of bank
// conflicts without padding.  All offsets are 64-bit.
//   transpose_tiles / transpose_square_inplace: one tile (pair) per block, blockDim 32 x 8.
//   transpose_tiles_pf / transpose_square_pf: a persistent grid whose blocks issue the loads of
//   their next tile (pair) before they store the current one, blockDim 32 x TR and
//   __launch_bounds__(32 * TR, MINB) as template parameters, and byte-permute (prmt) register
//   transposes of 1-byte blocks (which make an 8 x 8 byte block, V = 8, cheap).  The square
//   kernel also issues the loads of BOTH tiles of a pair before touching either.
//
// In place rectangular.  For an m x n row-major matrix with m <= n, c = gcd(m, n), a = m / c,
// b = n / c, the transpose is (C2R, Catanzaro et al.):
//   1. if c > 1, rotate column j up by floor(j / b):       A[i][j] <- A[(i + j/b) mod m][j]
//   2. permute every row i (scatter):                       A[i][d_i(j)] <- A[i][j],
//      d_i(j) = ((i + j/b) mod m + j*m mod n) mod n,  and  j*m mod n = c * ((j mod b) * a mod b)
//   3. permute every column (gather):                       A[i][j] <- A[(p(i) + j) mod m][j],
//      p(i) = (i*n - floor(i/a)) mod m
// after which the buffer holds the n x m transpose.  An n x m matrix (n > m) is transposed by the
// inverse steps in reverse order (R2C on the m x n view of its transpose).  Row steps hold one row
// in shared memory (one block per row, coalesced loads and stores, the permutation applied inside
// shared memory); column steps hold a panel of w adjacent columns (all m rows) in shared memory.
// Every index is advanced incrementally, so the inner loops do no integer division.  Rows or
// panels too large for shared memory go through the *_global kernels and a small device scratch
// buffer chosen by the launcher.

#include "tile.cuh"

#define TB 32          // tile side in V x V blocks (one warp across)
#define TROWS 8        // blockDim.y of the one-tile-per-block kernels
// loads kept in flight per thread in the row and panel kernels (fewer for wide elements)
#define NB(ES) ((ES) >= 8 ? 4 : 8)


// ------------------------------------------------------------------------------------------------
// Register transposes of a V x V element block
// ------------------------------------------------------------------------------------------------

// Transpose a V x V element block held as V vectors (in[e] = row e); out[f] = column f.
template <int ES, int V> struct RegT {
    typedef typename Raw<ES>::t T;
    typedef typename Raw<ES * V>::t Vec;
    union Pack { Vec v; T e[V]; };
    static __device__ __forceinline__ void run(const Vec* in, Vec* out)
    {
#pragma unroll
        for (int f = 0; f < V; ++f) {
            Pack q;
#pragma unroll
            for (int e = 0; e < V; ++e) {
                Pack p;
                p.v = in[e];
                q.e[e] = p.e[f];
            }
            out[f] = q.v;
        }
    }
};

// 4 x 4 byte transpose: word e holds row e (byte f = column f); afterwards word f holds column f.
__device__ __forceinline__ void bt4(unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3)
{
    const unsigned x0 = __byte_perm(r0, r1, 0x5140), x1 = __byte_perm(r0, r1, 0x7362);
    const unsigned y0 = __byte_perm(r2, r3, 0x5140), y1 = __byte_perm(r2, r3, 0x7362);
    r0 = __byte_perm(x0, y0, 0x5410);
    r1 = __byte_perm(x0, y0, 0x7632);
    r2 = __byte_perm(x1, y1, 0x5410);
    r3 = __byte_perm(x1, y1, 0x7632);
}

// 1-byte blocks through byte permutes (prmt).
template <> struct RegT<1, 4> {
    static __device__ __forceinline__ void run(const unsigned* in, unsigned* out)
    {
        unsigned r0 = in[0], r1 = in[1], r2 = in[2], r3 = in[3];
        bt4(r0, r1, r2, r3);
        out[0] = r0; out[1] = r1; out[2] = r2; out[3] = r3;
    }
};
// 8 x 8 bytes = four 4 x 4 byte blocks: (lo words of rows 0-3, 4-7) give the lo / hi words of
// columns 0-3; the hi words give columns 4-7.
template <> struct RegT<1, 8> {
    static __device__ __forceinline__ void run(const uint2* in, uint2* out)
    {
        unsigned a0 = in[0].x, a1 = in[1].x, a2 = in[2].x, a3 = in[3].x;   // rows 0-3, cols 0-3
        unsigned b0 = in[4].x, b1 = in[5].x, b2 = in[6].x, b3 = in[7].x;   // rows 4-7, cols 0-3
        unsigned c0 = in[0].y, c1 = in[1].y, c2 = in[2].y, c3 = in[3].y;   // rows 0-3, cols 4-7
        unsigned d0 = in[4].y, d1 = in[5].y, d2 = in[6].y, d3 = in[7].y;   // rows 4-7, cols 4-7
        bt4(a0, a1, a2, a3);
        bt4(b0, b1, b2, b3);
        bt4(c0, c1, c2, c3);
        bt4(d0, d1, d2, d3);
        out[0] = make_uint2(a0, b0); out[1] = make_uint2(a1, b1);
        out[2] = make_uint2(a2, b2); out[3] = make_uint2(a3, b3);
        out[4] = make_uint2(c0, d0); out[5] = make_uint2(c1, d1);
        out[6] = make_uint2(c2, d2); out[7] = make_uint2(c3, d3);
    }
};

// ------------------------------------------------------------------------------------------------
// Tile kernels
// ------------------------------------------------------------------------------------------------

// The registers of one tile between its loads and its shared-memory writes (blockDim = 32 x TR).
template <int ES, int V, int TR>
struct TileRegs {
    typedef typename Raw<ES>::t T;
    typedef typename Raw<ES * V>::t Vec;
    enum { K = TB / TR };
    Vec p[K][V];

    // Issue the loads of input tile (r0, c0) of a rows x cols matrix (no wait).  rows and cols
    // are multiples of V when V > 1 (the launcher guarantees it).
    __device__ __forceinline__ void fetch(const T* in, long long rows, long long cols,
                                          long long r0, long long c0)
    {
        const long long vcols = cols / V, brows = rows / V;
        const long long vc = c0 / V + threadIdx.x;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const long long br = r0 / V + threadIdx.y + k * TR;
            if (br < brows && vc < vcols) {
#pragma unroll
                for (int e = 0; e < V; ++e)
                    p[k][e] = reinterpret_cast<const Vec*>(in + (br * V + e) * cols)[vc];
            }
        }
    }

    // Transpose the blocks in registers and write them into the shared tile laid out as the
    // output tile: output row tx*V + f, vector column bi, swizzle key (row / V) == tx.
    __device__ __forceinline__ void put(Vec* sm, long long rows, long long cols, long long r0,
                                        long long c0) const
    {
        const int tx = threadIdx.x;
        const long long vcols = cols / V, brows = rows / V;
        const long long vc = c0 / V + tx;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const int bi = threadIdx.y + k * TR;
            if (r0 / V + bi < brows && vc < vcols) {
                Vec q[V];
                RegT<ES, V>::run(p[k], q);
#pragma unroll
                for (int f = 0; f < V; ++f) sm[(tx * V + f) * TB + (bi ^ tx)] = q[f];
            }
        }
    }
};

// The tiles of a rows x cols input (row stride cols) and its cols x rows output (tile.cuh).
template <int ES, int V>
__device__ __forceinline__ void load_tile(const typename Raw<ES>::t* in,
                                          typename Raw<ES * V>::t* sm, long long rows,
                                          long long cols, long long r0, long long c0)
{
    tile_load<ES, V, TB, TROWS>(in, sm, rows, cols, cols, r0, c0);
}

template <int ES, int V, int TR>
__device__ __forceinline__ void store_tile(const typename Raw<ES * V>::t* sm,
                                           typename Raw<ES>::t* out, long long rows,
                                           long long cols, long long r0, long long c0)
{
    tile_store<ES, V, TB, TR>(sm, out, rows, cols, rows, r0, c0);
}

// Pair index -> (ti, tj), ti <= tj, of the upper triangle of a tiles x tiles grid; row ti of the
// triangle starts at off(ti) = ti*tiles - ti*(ti-1)/2.
__device__ __forceinline__ void pair_coords(long long idx, long long tiles, long long& ti,
                                            long long& tj)
{
    const double tt = 2.0 * (double)tiles + 1.0;
    ti = (long long)((tt - sqrt(tt * tt - 8.0 * (double)idx)) * 0.5);
    if (ti < 0) ti = 0;
    if (ti > tiles - 1) ti = tiles - 1;
    while (ti > 0 && ti * tiles - ti * (ti - 1) / 2 > idx) --ti;
    while (ti + 1 < tiles && (ti + 1) * tiles - (ti + 1) * ti / 2 <= idx) ++ti;
    tj = ti + (idx - (ti * tiles - ti * (ti - 1) / 2));
}

// Out of place: in is batch x rows x cols, out is batch x cols x rows (both C-contiguous).
template <int ES, int V>
__global__ void __launch_bounds__(TB * TROWS)
transpose_tiles(const typename Raw<ES>::t* __restrict__ in, typename Raw<ES>::t* __restrict__ out,
                long long rows, long long cols, long long batch, long long tiles_r,
                long long tiles_c)
{
    typedef typename Raw<ES * V>::t Vec;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    Vec* sm = reinterpret_cast<Vec*>(smem_raw);
    const long long side = TB * V;
    const long long per = tiles_r * tiles_c;
    const long long total = per * batch;
    for (long long t = blockIdx.x; t < total; t += gridDim.x) {
        const long long bi = t / per;
        const long long rem = t - bi * per;
        const long long tr = rem / tiles_c;
        const long long tc = rem - tr * tiles_c;
        const long long off = bi * rows * cols;
        load_tile<ES, V>(in + off, sm, rows, cols, tr * side, tc * side);
        __syncthreads();
        store_tile<ES, V, TROWS>(sm, out + off, rows, cols, tr * side, tc * side);
        __syncthreads();
    }
}

// In place, square n x n (batched): one block swaps tile (ti, tj) with tile (tj, ti), ti <= tj,
// transposing both; a diagonal tile is transposed through shared memory alone.
template <int ES, int V>
__global__ void __launch_bounds__(TB * TROWS)
transpose_square_inplace(typename Raw<ES>::t* data, long long n, long long batch, long long tiles)
{
    typedef typename Raw<ES * V>::t Vec;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    Vec* sa = reinterpret_cast<Vec*>(smem_raw);
    Vec* sb = sa + TB * V * TB;
    const long long side = TB * V;
    const long long pairs = tiles * (tiles + 1) / 2;
    const long long total = pairs * batch;
    for (long long t = blockIdx.x; t < total; t += gridDim.x) {
        const long long bi = t / pairs;
        const long long idx = t - bi * pairs;
        // pair_coords(idx, tiles, ti, tj) spelled out: a call here compiles to other PTX (block
        // order), and this keeps the kernel's code exactly what BENCHMARKS.md measured
        const double tt = 2.0 * (double)tiles + 1.0;
        long long ti = (long long)((tt - sqrt(tt * tt - 8.0 * (double)idx)) * 0.5);
        if (ti < 0) ti = 0;
        if (ti > tiles - 1) ti = tiles - 1;
        while (ti > 0 && ti * tiles - ti * (ti - 1) / 2 > idx) --ti;
        while (ti + 1 < tiles && (ti + 1) * tiles - (ti + 1) * ti / 2 <= idx) ++ti;
        const long long tj = ti + (idx - (ti * tiles - ti * (ti - 1) / 2));
        typename Raw<ES>::t* base = data + bi * n * n;
        load_tile<ES, V>(base, sa, n, n, ti * side, tj * side);
        if (ti != tj) load_tile<ES, V>(base, sb, n, n, tj * side, ti * side);
        __syncthreads();
        store_tile<ES, V, TROWS>(sa, base, n, n, ti * side, tj * side);
        if (ti != tj) store_tile<ES, V, TROWS>(sb, base, n, n, tj * side, ti * side);
        __syncthreads();
    }
}

// Out of place, persistent: block b handles tiles b, b + grid, ...; the loads of the next tile
// are issued before the current tile is stored.
template <int ES, int V, int TR, int MINB>
__global__ void __launch_bounds__(TB * TR, MINB)
transpose_tiles_pf(const typename Raw<ES>::t* __restrict__ in, typename Raw<ES>::t* __restrict__ out,
                   long long rows, long long cols, long long batch, long long tiles_r,
                   long long tiles_c)
{
    typedef typename Raw<ES * V>::t Vec;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    Vec* sm = reinterpret_cast<Vec*>(smem_raw);
    const long long side = TB * V;
    const long long per = tiles_r * tiles_c;
    const long long total = per * batch;
    long long t = blockIdx.x;
    if (t >= total) return;
    long long off, r0, c0;
    {
        const long long bi = t / per, rem = t - bi * per, tr = rem / tiles_c;
        off = bi * rows * cols; r0 = tr * side; c0 = (rem - tr * tiles_c) * side;
    }
    TileRegs<ES, V, TR> R;
    R.fetch(in + off, rows, cols, r0, c0);
    while (true) {
        R.put(sm, rows, cols, r0, c0);
        __syncthreads();
        const long long tn = t + gridDim.x;
        long long noff = 0, nr0 = 0, nc0 = 0;
        if (tn < total) {
            const long long bi = tn / per, rem = tn - bi * per, tr = rem / tiles_c;
            noff = bi * rows * cols; nr0 = tr * side; nc0 = (rem - tr * tiles_c) * side;
            R.fetch(in + noff, rows, cols, nr0, nc0);
        }
        store_tile<ES, V, TR>(sm, out + off, rows, cols, r0, c0);
        if (tn >= total) break;
        __syncthreads();
        t = tn; off = noff; r0 = nr0; c0 = nc0;
    }
}

// In place square, persistent: both tiles of a pair are loaded before either is written to shared
// memory, and the next pair is loaded before the current one is stored (pairs are disjoint, so
// prefetching the next pair never reads what this or another block writes).
template <int ES, int V, int TR, int MINB>
__global__ void __launch_bounds__(TB * TR, MINB)
transpose_square_pf(typename Raw<ES>::t* data, long long n, long long batch, long long tiles)
{
    typedef typename Raw<ES>::t T;
    typedef typename Raw<ES * V>::t Vec;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    Vec* sa = reinterpret_cast<Vec*>(smem_raw);
    Vec* sb = sa + TB * V * TB;
    const long long side = TB * V;
    const long long pairs = tiles * (tiles + 1) / 2;
    const long long total = pairs * batch;
    long long t = blockIdx.x;
    if (t >= total) return;
    long long bi = t / pairs, ti, tj;
    pair_coords(t - bi * pairs, tiles, ti, tj);
    TileRegs<ES, V, TR> A, B;
    T* base = data + bi * n * n;
    A.fetch(base, n, n, ti * side, tj * side);
    if (ti != tj) B.fetch(base, n, n, tj * side, ti * side);
    while (true) {
        A.put(sa, n, n, ti * side, tj * side);
        if (ti != tj) B.put(sb, n, n, tj * side, ti * side);
        __syncthreads();
        const long long tn = t + gridDim.x;
        long long nbi = 0, nti = 0, ntj = 0;
        if (tn < total) {
            nbi = tn / pairs;
            pair_coords(tn - nbi * pairs, tiles, nti, ntj);
            const T* nbase = data + nbi * n * n;
            A.fetch(nbase, n, n, nti * side, ntj * side);
            if (nti != ntj) B.fetch(nbase, n, n, ntj * side, nti * side);
        }
        store_tile<ES, V, TR>(sa, base, n, n, ti * side, tj * side);
        if (ti != tj) store_tile<ES, V, TR>(sb, base, n, n, tj * side, ti * side);
        if (tn >= total) break;
        __syncthreads();
        t = tn; bi = nbi; ti = nti; tj = ntj; base = data + bi * n * n;
    }
}

// ------------------------------------------------------------------------------------------------
// In place rectangular: row permutation (step 2), one row per block in shared memory
// ------------------------------------------------------------------------------------------------

// Shared-memory slot of row element p: XOR the low 5 bits with a fold of the higher bits, so that
// stride-2^k scatters spread over the banks while 32 consecutive elements stay in their chunk.
__device__ __forceinline__ unsigned swz(unsigned p)
{
    unsigned h = p >> 5;
    h ^= h >> 5;
    h ^= h >> 10;
    return p ^ (h & 31u);
}

// d_i(j) for j = j0, j0 + step, j0 + 2*step, ... without division in the loop.
struct RowPerm {
    unsigned q, r, u;        // q = j / b, r = j % b, u = r * a % b
    __device__ __forceinline__ void init(unsigned j, unsigned a, unsigned b)
    {
        q = j / b;
        r = j - q * b;
        u = (unsigned)(((unsigned long long)r * a) % b);
    }
    __device__ __forceinline__ void next(unsigned b, unsigned sq, unsigned sr, unsigned su)
    {
        q += sq; r += sr; u += su;
        if (r >= b) { r -= b; q += 1; }
        if (u >= b) u -= b;
    }
    __device__ __forceinline__ unsigned at(unsigned i, unsigned m, unsigned n, unsigned c) const
    {
        unsigned t = i + q;
        if (t >= m) t -= m;
        unsigned d = t + c * u;
        if (d >= n) d -= n;
        return d;
    }
};

// gather == 0: A[i][d_i(j)] <- A[i][j] (C2R step 2); gather == 1: A[i][j] <- A[i][d_i(j)] (its
// inverse).  sq, sr, su: blockDim.x / b, blockDim.x % b, (blockDim.x % b) * a % b.
template <int ES>
__global__ void __launch_bounds__(1024)
row_permute(typename Raw<ES>::t* data, unsigned m, unsigned n, unsigned c, unsigned a, unsigned b,
            unsigned sq, unsigned sr, unsigned su, int gather)
{
    typedef typename Raw<ES>::t T;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    T* srow = reinterpret_cast<T*>(smem_raw);
    const unsigned nt = blockDim.x;
    for (unsigned i = blockIdx.x; i < m; i += gridDim.x) {
        T* row = data + (unsigned long long)i * n;
        RowPerm perm;
        perm.init(threadIdx.x, a, b);
        for (unsigned base = threadIdx.x; base < n; base += NB(ES) * nt) {
            T v[NB(ES)];
#pragma unroll
            for (int k = 0; k < NB(ES); ++k) {
                const unsigned j = base + k * nt;
                if (j < n) v[k] = row[j];
            }
#pragma unroll
            for (int k = 0; k < NB(ES); ++k) {
                const unsigned j = base + k * nt;
                if (j < n) srow[swz(gather ? j : perm.at(i, m, n, c))] = v[k];
                if (!gather) perm.next(b, sq, sr, su);
            }
        }
        __syncthreads();
        perm.init(threadIdx.x, a, b);
        for (unsigned base = threadIdx.x; base < n; base += NB(ES) * nt) {
#pragma unroll
            for (int k = 0; k < NB(ES); ++k) {
                const unsigned j = base + k * nt;
                if (j < n) row[j] = srow[swz(gather ? perm.at(i, m, n, c) : j)];
                if (gather) perm.next(b, sq, sr, su);
            }
        }
        __syncthreads();
    }
}

// ------------------------------------------------------------------------------------------------
// In place rectangular: column permutations (steps 1 and 3), a panel of w columns per block
// ------------------------------------------------------------------------------------------------

// Modes: 0 rotate column j up by j/b (gather), 1 column shuffle p(i) + j (gather),
//        2 inverse column shuffle (scatter), 3 rotate column j down by j/b (gather).
// Row index f(i) for the thread's column j, advanced by the row stride s = blockDim.x / w.
struct ColPerm {
    unsigned m, a, x, y, z, rot, jm, sn, sq, sr, s;
    int mode;
    // i0: first row; nmm = n mod m
    __device__ __forceinline__ void init(int mode_, unsigned i0, unsigned long long j, unsigned m_,
                                         unsigned a_, unsigned long long b, unsigned nmm,
                                         unsigned s_, unsigned sn_, unsigned sq_, unsigned sr_)
    {
        mode = mode_; m = m_; a = a_; s = s_; sn = sn_; sq = sq_; sr = sr_;
        if (mode == 0 || mode == 3) {
            unsigned r = (unsigned)(j / b);          // < c <= m
            rot = (mode == 0 || r == 0) ? r : m - r;
            x = i0 % m;
        } else {
            jm = (unsigned)(j % m);
            x = (unsigned)(((unsigned long long)i0 * nmm) % m);   // i*n mod m
            y = i0 / a;                                             // floor(i / a)
            z = i0 - y * a;
        }
    }
    __device__ __forceinline__ unsigned at() const
    {
        if (mode == 0 || mode == 3) {
            unsigned f = x + rot;
            return f >= m ? f - m : f;
        }
        unsigned p = x >= y ? x - y : x + m - y;
        unsigned f = p + jm;
        return f >= m ? f - m : f;
    }
    __device__ __forceinline__ void next()
    {
        if (mode == 0 || mode == 3) {
            x += s;             // the row itself; only compared while < m, never wrapped
            return;
        }
        x += sn; if (x >= m) x -= m;
        y += sq; z += sr;
        if (z >= a) { z -= a; y += 1; }
    }
};

template <int ES>
__global__ void __launch_bounds__(1024)
panel_permute(typename Raw<ES>::t* data, unsigned m, unsigned long long n, unsigned w, int mode,
              unsigned a, unsigned long long b, unsigned nmm, unsigned sn, unsigned sq,
              unsigned sr, unsigned long long npanels)
{
    typedef typename Raw<ES>::t T;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    T* sp = reinterpret_cast<T*>(smem_raw);
    const unsigned s = blockDim.x / w;
    const unsigned jj = threadIdx.x % w;
    const unsigned i0 = threadIdx.x / w;
    const bool scatter = (mode == 2);
    for (unsigned long long P = blockIdx.x; P < npanels; P += gridDim.x) {
        const unsigned long long j = P * w + jj;
        const bool live = j < n;
        ColPerm f;
        f.init(mode, i0, j, m, a, b, nmm, s, sn, sq, sr);
        if (live) {
            for (unsigned base = i0; base < m; base += NB(ES) * s) {
                T v[NB(ES)];
#pragma unroll
                for (int k = 0; k < NB(ES); ++k) {
                    const unsigned i = base + k * s;
                    if (i < m) v[k] = data[(unsigned long long)i * n + j];
                }
#pragma unroll
                for (int k = 0; k < NB(ES); ++k) {
                    const unsigned i = base + k * s;
                    if (i < m) sp[(scatter ? f.at() : i) * w + jj] = v[k];
                    if (scatter) f.next();
                }
            }
        }
        __syncthreads();
        if (live) {
            for (unsigned i = i0; i < m; i += s) {
                data[(unsigned long long)i * n + j] = sp[(scatter ? i : f.at()) * w + jj];
                if (!scatter) f.next();
            }
        }
        __syncthreads();
    }
}

// ------------------------------------------------------------------------------------------------
// Fallbacks through device scratch, for rows or panels that do not fit in shared memory.
// ------------------------------------------------------------------------------------------------

// Rows [row0, row0 + g) permuted into scratch (g x n); the launcher copies scratch back.
template <int ES>
__global__ void row_permute_global(const typename Raw<ES>::t* __restrict__ data,
                                   typename Raw<ES>::t* __restrict__ scratch, unsigned long long m,
                                   unsigned long long n, unsigned long long c,
                                   unsigned long long a, unsigned long long b,
                                   unsigned long long row0, unsigned long long g, int gather)
{
    const unsigned long long total = g * n;
    for (unsigned long long t = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
         t < total; t += (unsigned long long)gridDim.x * blockDim.x) {
        const unsigned long long il = t / n;
        const unsigned long long j = t - il * n;
        const unsigned long long i = row0 + il;
        const unsigned long long q = j / b;
        const unsigned long long r = j - q * b;
        unsigned long long tq = i + q;
        if (tq >= m) tq -= m;
        unsigned long long d = tq + c * ((r * a) % b);
        if (d >= n) d -= n;
        if (gather) scratch[il * n + j] = data[i * n + d];
        else scratch[il * n + d] = data[i * n + j];
    }
}

// Columns [j0, j0 + g) permuted into scratch (m x g); the launcher copies scratch back.
template <int ES>
__global__ void panel_permute_global(const typename Raw<ES>::t* __restrict__ data,
                                     typename Raw<ES>::t* __restrict__ scratch,
                                     unsigned long long m, unsigned long long n,
                                     unsigned long long a, unsigned long long b,
                                     unsigned long long j0, unsigned long long g, int mode)
{
    const unsigned long long total = m * g;
    for (unsigned long long t = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
         t < total; t += (unsigned long long)gridDim.x * blockDim.x) {
        const unsigned long long i = t / g;
        const unsigned long long jj = t - i * g;
        const unsigned long long j = j0 + jj;
        if (j >= n) continue;
        unsigned long long f;
        if (mode == 0 || mode == 3) {
            const unsigned long long r = (j / b) % m;
            f = mode == 0 ? (i + r) % m : (i + m - r) % m;
        } else {
            const unsigned long long p = ((i * (n % m)) % m + m - (i / a) % m) % m;
            f = (p + j % m) % m;
        }
        if (mode == 2) scratch[f * g + jj] = data[i * n + j];
        else scratch[i * g + jj] = data[f * n + j];
    }
}
