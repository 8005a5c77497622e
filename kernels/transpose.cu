// Tiled matrix transposes: out of place, in place for square matrices, and in place for
// rectangular matrices through the decomposition of Catanzaro, Keller and Garland ("A
// decomposition for in-place matrix transposition", PPoPP 2014).
//
// Elements are moved as raw bytes: only the element size ES (1, 2, 4, 8 or 16) matters.
//
// Out of place / in place square ("tile" kernels).  A block moves one tile of SIDE x SIDE
// elements, SIDE = 32 * V.  The tile is cut into V x V element blocks; a thread loads the V rows
// of one block as V vectors of V elements (V * ES bytes each, so 1- and 2-byte elements travel in
// 4- or 8-byte words), transposes the V x V block in registers, and writes the V resulting
// vectors into a shared-memory tile laid out as the OUTPUT tile.  After a barrier every warp writes
// whole output rows with coalesced vector stores.  The shared tile is XOR-swizzled
// (column ^ (row / V)) so that both the scattered writes and the row reads are free of bank
// conflicts without padding.  All offsets are 64-bit.
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

#define TB 32          // tile side in V x V blocks (one warp across)
#define TROWS 8        // blockDim.y of the tile kernels
// loads kept in flight per thread in the row and panel kernels (fewer for wide elements)
#define NB(ES) ((ES) >= 8 ? 4 : 8)

template <int B> struct Raw;
template <> struct Raw<1> { typedef unsigned char t; };
template <> struct Raw<2> { typedef unsigned short t; };
template <> struct Raw<4> { typedef unsigned int t; };
template <> struct Raw<8> { typedef uint2 t; };
template <> struct Raw<16> { typedef uint4 t; };

// ------------------------------------------------------------------------------------------------
// Tile kernels
// ------------------------------------------------------------------------------------------------

// Load input tile (r0, c0) of a rows x cols matrix into shared memory laid out as the output tile.
// rows and cols are multiples of V when V > 1 (the launcher guarantees it).
template <int ES, int V>
__device__ __forceinline__ void load_tile(const typename Raw<ES>::t* in,
                                          typename Raw<ES * V>::t* sm, long long rows,
                                          long long cols, long long r0, long long c0)
{
    typedef typename Raw<ES>::t T;
    typedef typename Raw<ES * V>::t Vec;
    union Pack { Vec v; T e[V]; };
    const int tx = threadIdx.x, ty = threadIdx.y;
    const long long vcols = cols / V;
    const long long vc = c0 / V + tx;
    const long long brows = rows / V;
    Pack p[TB / TROWS][V];
#pragma unroll
    for (int k = 0; k < TB / TROWS; ++k) {
        const long long br = r0 / V + ty + k * TROWS;
        if (br < brows && vc < vcols) {
#pragma unroll
            for (int e = 0; e < V; ++e)
                p[k][e].v = reinterpret_cast<const Vec*>(in + (br * V + e) * cols)[vc];
        }
    }
#pragma unroll
    for (int k = 0; k < TB / TROWS; ++k) {
        const int bi = ty + k * TROWS;
        const long long br = r0 / V + bi;
        if (br < brows && vc < vcols) {
#pragma unroll
            for (int f = 0; f < V; ++f) {
                Pack q;
#pragma unroll
                for (int e = 0; e < V; ++e) q.e[e] = p[k][e].e[f];
                // output row tx*V + f of the tile, vector column bi; swizzle key (row / V) == tx
                sm[(tx * V + f) * TB + (bi ^ tx)] = q.v;
            }
        }
    }
}

// Store the shared tile (from input tile (r0, c0)) into the cols x rows output.
template <int ES, int V>
__device__ __forceinline__ void store_tile(const typename Raw<ES * V>::t* sm,
                                           typename Raw<ES>::t* out, long long rows,
                                           long long cols, long long r0, long long c0)
{
    typedef typename Raw<ES * V>::t Vec;
    const int tx = threadIdx.x, ty = threadIdx.y;
    const long long ovcols = rows / V;
    const long long ovc = r0 / V + tx;
#pragma unroll
    for (int k = 0; k < (TB * V) / TROWS; ++k) {
        const int orow = ty + k * TROWS;
        const long long og = c0 + orow;
        if (og < cols && ovc < ovcols)
            reinterpret_cast<Vec*>(out + og * rows)[ovc] = sm[orow * TB + (tx ^ ((orow / V) & (TB - 1)))];
    }
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
        store_tile<ES, V>(sm, out + off, rows, cols, tr * side, tc * side);
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
        // row ti of the upper triangle starts at off(ti) = ti*tiles - ti*(ti-1)/2
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
        store_tile<ES, V>(sa, base, n, n, ti * side, tj * side);
        if (ti != tj) store_tile<ES, V>(sb, base, n, n, tj * side, ti * side);
        __syncthreads();
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
