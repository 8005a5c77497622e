// Bitshuffle on the GPU (the bitshuffle package's layout, as used by HDF5 and Blosc).  Launched by
// bitshuffle.py, which holds the NumPy twin these kernels must match byte for byte.
//
// bitshuffle / bitunshuffle (template E = element bytes, NT = threads per block)
//   A bitshuffle block of m elements (m a multiple of 8) becomes 8E planes of m/8 bytes; plane
//   p = 8j + k holds bit k of byte j of every element, element i at bit i%8 of byte i/8.  A CUDA
//   block takes a chunk of 32*NT elements of one bitshuffle block through shared memory (rows of
//   32 elements, padded by 4 bytes so that thread r reading row r hits distinct banks); thread r
//   turns its 32 elements into 8E plane words of 32 bits with 8x8 bit-matrix transposes in
//   registers (cheaper than 8E warp ballots per 32 elements: ~0.2 instructions per byte per warp;
//   4- and 8-byte elements unshuffle, and 8-byte ones shuffle, through 32x32 transposes of whole
//   words instead: fewer instructions), and a warp stores 32 consecutive words of one plane at a
//   time (128 coalesced bytes).
//   Unshuffle runs the same steps backwards.  Partial words (a block whose size is not a multiple
//   of 32, unaligned buffers) are written byte by byte; nothing outside the block is touched.
//   4- and 8-byte elements run the full blocks through the flat kernels below, 1- and 2-byte
//   elements shuffle them through the direct kernel at the end.

// No headers (NVRTC): the fixed-width types are spelled out; identical to <cstdint> on Linux.
typedef unsigned char uint8_t;
typedef unsigned int uint32_t;

typedef long long i64;
typedef unsigned long long u64;

__device__ __forceinline__ u64 transpose8(u64 x) {
    // 8x8 bit matrix, row i = byte i, column k = bit k  ->  row k = byte k, column i = bit i
    u64 t;
    t = (x ^ (x >> 7)) & 0x00AA00AA00AA00AAULL;  x = x ^ t ^ (t << 7);
    t = (x ^ (x >> 14)) & 0x0000CCCC0000CCCCULL; x = x ^ t ^ (t << 14);
    t = (x ^ (x >> 28)) & 0x00000000F0F0F0F0ULL; x = x ^ t ^ (t << 28);
    return x;
}

// byte k (0..7) of each of a, b, c, d -> bytes 0..3 of the result
__device__ __forceinline__ uint32_t pick4(u64 a, u64 b, u64 c, u64 d, int k) {
    const int sh = (k & 4) ? 32 : 0;
    const unsigned kk = k & 3, s = kk | ((kk + 4) << 4);
    const uint32_t ab = __byte_perm((uint32_t)(a >> sh), (uint32_t)(b >> sh), s);
    const uint32_t cd = __byte_perm((uint32_t)(c >> sh), (uint32_t)(d >> sh), s);
    return __byte_perm(ab, cd, 0x5410);
}

// byte k (0..3) of each of four words -> bytes 0..3 of the result
__device__ __forceinline__ uint32_t pick4w(uint32_t a, uint32_t b, uint32_t c, uint32_t d, int k) {
    const unsigned s = k | ((k + 4) << 4);
    return __byte_perm(__byte_perm(a, b, s), __byte_perm(c, d, s), 0x5410);
}

// 32 x 32 bit matrix in place: bit i of a[p] <-> bit p of a[i] (LSB first).  Five stages of
// block swaps, 16 swaps a stage, five instructions a swap: 3.1 instructions a byte, where the
// 8 x 8 transposes of bytes below take ~5 with their byte picks.  For 4- and 8-byte elements a
// row's planes are exactly this transpose of its element words (plane 8j + k is bit 8j + k).
template <int J, uint32_t M>
__device__ __forceinline__ void transpose32_stage(uint32_t (&a)[32]) {
#pragma unroll
    for (int k = 0; k < 32; ++k) {
        if (k & J) continue;
        const uint32_t t = ((a[k] >> J) ^ a[k + J]) & M;
        a[k + J] ^= t;
        a[k] ^= t << J;
    }
}

__device__ __forceinline__ void transpose32(uint32_t (&a)[32]) {
    transpose32_stage<16, 0x0000FFFFu>(a);
    transpose32_stage<8, 0x00FF00FFu>(a);
    transpose32_stage<4, 0x0F0F0F0Fu>(a);
    transpose32_stage<2, 0x33333333u>(a);
    transpose32_stage<1, 0x55555555u>(a);
}

template <int E> struct Row {
    static constexpr int BYTES = 32 * E;       // 32 elements
    static constexpr int STRIDE = 32 * E + 4;  // padded row in shared memory
    static constexpr int WORDS = 8 * E;        // words per row
};

// x = byte j of elements 8q..8q+7 (element 8q+i at byte i), from a row of 32 elements (words).
template <int E>
__device__ __forceinline__ u64 gather(const uint32_t* row, int q, int j) {
    if (E == 1) {
        return (u64)row[2 * q] | ((u64)row[2 * q + 1] << 32);
    } else if (E == 2) {
        const unsigned s = j ? 0x7531 : 0x6420;
        const uint32_t lo = __byte_perm(row[4 * q], row[4 * q + 1], s);
        const uint32_t hi = __byte_perm(row[4 * q + 2], row[4 * q + 3], s);
        return (u64)lo | ((u64)hi << 32);
    } else {
        constexpr int EW = E / 4;
        const int jw = j >> 2, b = j & 3;
        const uint32_t* r = row + (8 * q) * EW + jw;
        const uint32_t lo = pick4w(r[0], r[EW], r[2 * EW], r[3 * EW], b);
        const uint32_t hi = pick4w(r[4 * EW], r[5 * EW], r[6 * EW], r[7 * EW], b);
        return (u64)lo | ((u64)hi << 32);
    }
}

struct ChunkGeom {
    i64 blk, m, c0, c1;
    bool ok;
};

__device__ __forceinline__ ChunkGeom chunk_geom(i64 B, i64 nfull, i64 mlast, i64 cpb, i64 CH) {
    ChunkGeom g;
    const i64 bid = blockIdx.x;
    if (bid < nfull * cpb) {
        g.blk = bid / cpb;
        g.c0 = (bid % cpb) * CH;
        g.m = B;
    } else {
        g.blk = nfull;
        g.c0 = (bid - nfull * cpb) * CH;
        g.m = mlast;
    }
    g.c1 = g.c0 + CH < g.m ? g.c0 + CH : g.m;
    g.ok = g.c0 < g.m;
    return g;
}

// The valid bytes of row r's word of each plane: a row holds up to 32 of the chunk's nel
// elements (8..32 valid, a multiple of 8 inside a bitshuffle block), one plane bit each.
__device__ __forceinline__ int row_plane_bytes(i64 nel, int r) {
    const i64 ve = nel - 32 * (i64)r < 32 ? nel - 32 * (i64)r : 32;
    return (int)(ve / 8);
}

// Stage nbytes at src into the padded rows of sm (16-byte loads when vec16; the tail byte by byte).
template <int E, int NT>
__device__ __forceinline__ void stage_rows(const uint8_t* src, i64 nbytes, int vec16, uint8_t* sm) {
    typedef Row<E> R;
    i64 o0 = 0;
    if (vec16) {
        const i64 nw = nbytes >> 4;
        for (i64 w = threadIdx.x; w < nw; w += NT) {
            const uint4 v = __ldcs(reinterpret_cast<const uint4*>(src) + w);
            const i64 o = w << 4;
            uint32_t* d = reinterpret_cast<uint32_t*>(sm + (o / R::BYTES) * R::STRIDE + o % R::BYTES);
            d[0] = v.x; d[1] = v.y; d[2] = v.z; d[3] = v.w;
        }
        o0 = nw << 4;
    }
    for (i64 o = o0 + threadIdx.x; o < nbytes; o += NT)
        sm[(o / R::BYTES) * R::STRIDE + o % R::BYTES] = src[o];
}

// The first nbytes of the padded rows of sm to dst (16-byte streaming stores when vec16).
template <int E, int NT>
__device__ __forceinline__ void store_rows(const uint8_t* sm, uint8_t* dst, i64 nbytes, int vec16) {
    typedef Row<E> R;
    i64 o0 = 0;
    if (vec16) {
        const i64 nw = nbytes >> 4;
        for (i64 w = threadIdx.x; w < nw; w += NT) {
            const i64 o = w << 4;
            const uint32_t* s = reinterpret_cast<const uint32_t*>(sm + (o / R::BYTES) * R::STRIDE +
                                                                  o % R::BYTES);
            __stcs(reinterpret_cast<uint4*>(dst) + w, make_uint4(s[0], s[1], s[2], s[3]));
        }
        o0 = nw << 4;
    }
    for (i64 o = o0 + threadIdx.x; o < nbytes; o += NT)
        dst[o] = sm[(o / R::BYTES) * R::STRIDE + o % R::BYTES];
}

// shuffle_row's byte-transpose path, with whole words known at compile time.
template <int E, bool WHOLE>
__device__ __forceinline__ void shuffle_row_bytes(const uint32_t* row, uint8_t* dst,
                                                  i64 plane_bytes, int vb) {
#pragma unroll 1
    for (int j = 0; j < E; ++j) {
        u64 y[4];
#pragma unroll
        for (int q = 0; q < 4; ++q) y[q] = transpose8(gather<E>(row, q, j));
#pragma unroll
        for (int k = 0; k < 8; ++k) {
            const uint32_t word = pick4(y[0], y[1], y[2], y[3], k);
            uint8_t* p = dst + (i64)(8 * j + k) * plane_bytes;
            if (WHOLE) {
                *reinterpret_cast<uint32_t*>(p) = word;
            } else {
                for (int b = 0; b < vb; ++b) p[b] = (uint8_t)(word >> (8 * b));
            }
        }
    }
}

// One thread's row of 32 elements -> its 32-bit word of each of the 8E planes, plane p at
// dst + p * plane_bytes; vb valid bytes per word (whole: all 4, stored as one aligned word).
template <int E>
__device__ __forceinline__ void shuffle_row(const uint32_t* row, uint8_t* dst, i64 plane_bytes,
                                            int vb, bool whole) {
    if constexpr (E == 8) {
        // word h of each element (low, then high) -> planes 32h .. 32h + 31.  (4-byte elements
        // shuffle 1-2 points of copy faster through the byte transposes below, whose stores
        // interleave with their work: BENCHMARKS.md section 34.)
#pragma unroll 1
        for (int h = 0; h < E / 4; ++h) {
            uint32_t a[32];
#pragma unroll
            for (int i = 0; i < 32; ++i) a[i] = row[i * (E / 4) + h];
            transpose32(a);
            uint8_t* q = dst + (i64)(32 * h) * plane_bytes;
            if (whole) {   // plane_bytes is then a multiple of 4
                uint32_t* w = reinterpret_cast<uint32_t*>(q);
                const i64 pw = plane_bytes / 4;
#pragma unroll
                for (int p = 0; p < 32; ++p) w[p * pw] = a[p];
            } else {
#pragma unroll
                for (int p = 0; p < 32; ++p)
                    for (int b = 0; b < vb; ++b)
                        q[p * plane_bytes + b] = (uint8_t)(a[p] >> (8 * b));
            }
        }
        return;
    }
    if (whole)     // one branch for the row, not one a word (see unshuffle_row)
        shuffle_row_bytes<E, true>(row, dst, plane_bytes, 4);
    else
        shuffle_row_bytes<E, false>(row, dst, plane_bytes, vb);
}

// shuffle_row backwards: the words of the 8E planes at src -> the thread's row of 32 elements.
template <int E>
__device__ __forceinline__ void unshuffle_row(const uint8_t* src, i64 plane_bytes, int vb,
                                              bool whole, uint32_t* row) {
    if constexpr (E == 4 || E == 8) {
        // planes 32h .. 32h + 31 -> word h of each element (E = 8: low, then high)
#pragma unroll 1
        for (int h = 0; h < E / 4; ++h) {
            uint32_t a[32];
            const uint8_t* q = src + (i64)(32 * h) * plane_bytes;
            if (whole) {   // plane_bytes is then a multiple of 4
                const uint32_t* w = reinterpret_cast<const uint32_t*>(q);
                const i64 pw = plane_bytes / 4;
#pragma unroll
                for (int p = 0; p < 32; ++p) a[p] = __ldcs(w + p * pw);
            } else {
#pragma unroll
                for (int p = 0; p < 32; ++p) {
                    uint32_t v = 0;
                    for (int c = 0; c < vb; ++c) v |= (uint32_t)q[p * plane_bytes + c] << (8 * c);
                    a[p] = v;
                }
            }
            transpose32(a);
#pragma unroll
            for (int i = 0; i < 32; ++i) row[i * (E / 4) + h] = a[i];
        }
    } else {   // 1-, 2- and 16-byte elements: 8 x 8 byte transposes
#pragma unroll 1
        for (int jw = 0; jw < (E >= 4 ? E / 4 : 1); ++jw) {
            constexpr int JB = E >= 4 ? 4 : E;     // bytes j handled per pass
            // the pass's 8 JB plane words first, one branch for all of them (a branch per word
            // cost 4-byte elements 16 points of copy when they took this path, section 34)
            uint32_t words[JB][8];
            const uint8_t* base = src + (i64)(32 * jw) * plane_bytes;
            if (whole) {   // plane_bytes is then a multiple of 4
                const uint32_t* w = reinterpret_cast<const uint32_t*>(base);
                const i64 pw = plane_bytes / 4;
#pragma unroll
                for (int b = 0; b < JB; ++b)
#pragma unroll
                    for (int k = 0; k < 8; ++k) words[b][k] = __ldcs(w + (8 * b + k) * pw);
            } else {
#pragma unroll
                for (int b = 0; b < JB; ++b)
#pragma unroll
                    for (int k = 0; k < 8; ++k) {
                        const uint8_t* p = base + (i64)(8 * b + k) * plane_bytes;
                        uint32_t v = 0;
                        for (int c = 0; c < vb; ++c) v |= (uint32_t)p[c] << (8 * c);
                        words[b][k] = v;
                    }
            }
            u64 x[JB][4];
#pragma unroll
            for (int b = 0; b < JB; ++b) {
                const uint32_t* w = words[b];
#pragma unroll
                for (int q = 0; q < 4; ++q) {
                    const uint32_t lo = pick4w(w[0], w[1], w[2], w[3], q);
                    const uint32_t hi = pick4w(w[4], w[5], w[6], w[7], q);
                    x[b][q] = transpose8((u64)lo | ((u64)hi << 32));   // byte i: element 8q+i
                }
            }
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                if (E == 1) {
                    row[2 * q] = (uint32_t)x[0][q];
                    row[2 * q + 1] = (uint32_t)(x[0][q] >> 32);
                } else if (E == 2) {
#pragma unroll
                    for (int t = 0; t < 4; ++t) {
                        const int sh = t < 2 ? 0 : 32, tt = t & 1;
                        const unsigned s = (2 * tt) | ((4 + 2 * tt) << 4) | ((2 * tt + 1) << 8) |
                                           ((4 + 2 * tt + 1) << 12);
                        row[4 * q + t] = __byte_perm((uint32_t)(x[0][q] >> sh),
                                                     (uint32_t)(x[JB - 1][q] >> sh), s);
                    }
                } else {
                    constexpr int EW = E / 4;
#pragma unroll
                    for (int i = 0; i < 8; ++i)
                        row[(8 * q + i) * EW + jw] = pick4(x[0][q], x[1 % JB][q], x[2 % JB][q],
                                                           x[3 % JB][q], i);
                }
            }
        }
    }
}

template <int E, int NT>
__global__ void __launch_bounds__(NT)
bitshuffle_kernel(const uint8_t* __restrict__ in, uint8_t* __restrict__ out, i64 B, i64 nfull,
                  i64 mlast, i64 cpb, int vec16, int out4) {
    typedef Row<E> R;
    __shared__ __align__(16) uint8_t sm[NT * R::STRIDE];
    const ChunkGeom g = chunk_geom(B, nfull, mlast, cpb, 32 * NT);
    if (!g.ok) return;
    const i64 nel = g.c1 - g.c0, nbytes = nel * E;
    const int rows = (int)((nel + 31) / 32);
    stage_rows<E, NT>(in + (g.blk * B + g.c0) * E, nbytes, vec16, sm);
    for (i64 o = nbytes + threadIdx.x; o < (i64)rows * R::BYTES; o += NT)   // zeros past the end
        sm[(o / R::BYTES) * R::STRIDE + o % R::BYTES] = 0;
    __syncthreads();
    const int r = threadIdx.x;
    if (r >= rows) return;
    const int vb = row_plane_bytes(nel, r);
    shuffle_row<E>(reinterpret_cast<const uint32_t*>(sm + r * R::STRIDE),
                   out + g.blk * B * E + (g.c0 + 32 * (i64)r) / 8, g.m / 8, vb,
                   out4 && vb == 4 && (g.m % 32) == 0);
}

template <int E, int NT>
__global__ void __launch_bounds__(NT)
bitunshuffle_kernel(const uint8_t* __restrict__ in, uint8_t* __restrict__ out, i64 B, i64 nfull,
                    i64 mlast, i64 cpb, int vec16, int in4) {
    typedef Row<E> R;
    __shared__ __align__(16) uint8_t sm[NT * R::STRIDE];
    const ChunkGeom g = chunk_geom(B, nfull, mlast, cpb, 32 * NT);
    if (!g.ok) return;
    const i64 nel = g.c1 - g.c0, nbytes = nel * E;
    const int rows = (int)((nel + 31) / 32);
    const int r = threadIdx.x;
    if (r < rows) {
        const int vb = row_plane_bytes(nel, r);
        unshuffle_row<E>(in + g.blk * B * E + (g.c0 + 32 * (i64)r) / 8, g.m / 8, vb,
                         in4 && vb == 4 && (g.m % 32) == 0,
                         reinterpret_cast<uint32_t*>(sm + r * R::STRIDE));
    }
    __syncthreads();
    store_rows<E, NT>(sm, out + (g.blk * B + g.c0) * E, nbytes, vec16);
}

// ================================================================================================
// bitshuffle_flat / bitunshuffle_flat: the full blocks of 4- and 8-byte elements
// ================================================================================================
// The kernels above give a CUDA block one chunk of ONE bitshuffle block, so with the default block
// sizes of wide elements (1024 elements of 8 bytes = 32 rows) most of a 128-thread block idles.
// The flat kernels cover the full bitshuffle blocks [0, nfull * B) as one flat run of elements cut
// into chunks of 32 * NT elements (B a multiple of 32, so every row of 32 elements lies in one
// bitshuffle block): row r of a chunk is elements e = c0 + 32r .. +32, of bitshuffle block e / B,
// at offset e % B, and every thread has a whole row.  The final partial block (if any) and the
// verbatim tail still go through the kernels above.  Per-row work is identical.  bitshuffle.py runs
// them for 4- and 8-byte elements when B is a multiple of 32.

template <int E, int NT>
__global__ void __launch_bounds__(NT)
bitshuffle_flat(const uint8_t* __restrict__ in, uint8_t* __restrict__ out, i64 B, i64 total,
                int vec16, int out4) {
    typedef Row<E> R;
    __shared__ __align__(16) uint8_t sm[NT * R::STRIDE];
    const i64 c0 = (i64)blockIdx.x * (32 * NT);
    if (c0 >= total) return;
    const i64 nel = (total - c0 < 32 * NT) ? total - c0 : 32 * NT;   // a multiple of 32
    stage_rows<E, NT>(in + c0 * E, nel * E, vec16, sm);
    __syncthreads();
    const int r = threadIdx.x;
    if (r >= (int)(nel / 32)) return;
    const i64 e = c0 + 32 * (i64)r, blk = e / B, off = e - blk * B;
    shuffle_row<E>(reinterpret_cast<const uint32_t*>(sm + r * R::STRIDE),
                   out + blk * B * E + off / 8, B / 8, 4, out4);
}

template <int E, int NT>
__global__ void __launch_bounds__(NT)
bitunshuffle_flat(const uint8_t* __restrict__ in, uint8_t* __restrict__ out, i64 B, i64 total,
                  int vec16, int in4) {
    typedef Row<E> R;
    __shared__ __align__(16) uint8_t sm[NT * R::STRIDE];
    const i64 c0 = (i64)blockIdx.x * (32 * NT);
    if (c0 >= total) return;
    const i64 nel = (total - c0 < 32 * NT) ? total - c0 : 32 * NT;
    const int r = threadIdx.x;
    if (r < (int)(nel / 32)) {
        const i64 e = c0 + 32 * (i64)r, blk = e / B, off = e - blk * B;
        unshuffle_row<E>(in + blk * B * E + off / 8, B / 8, 4, in4,
                         reinterpret_cast<uint32_t*>(sm + r * R::STRIDE));
    }
    __syncthreads();
    store_rows<E, NT>(sm, out + c0 * E, nel * E, vec16);
}

// ================================================================================================
// bitshuffle_direct: the full blocks of 1- and 2-byte elements, no shared memory
// ================================================================================================
// Thread r loads its row of 32 elements (32E bytes, 16-byte aligned) straight into registers and
// stores its 8E plane words: no staging, no barrier, so a block never waits for all of its loads
// before its first store (the staged kernels stall on loads not yet returned in the profile).
// B is a multiple of 32 and the input 16-byte aligned (bitshuffle.py checks both).
template <int E, int NT>
__global__ void __launch_bounds__(NT)
bitshuffle_direct(const uint8_t* __restrict__ in, uint8_t* __restrict__ out, i64 B, i64 total,
                  int out4) {
    const i64 e = ((i64)blockIdx.x * NT + threadIdx.x) * 32;
    if (e >= total) return;
    uint32_t row[8 * E];
    const uint4* src = reinterpret_cast<const uint4*>(in + e * E);
#pragma unroll
    for (int i = 0; i < 2 * E; ++i) {
        const uint4 v = src[i];
        row[4 * i] = v.x; row[4 * i + 1] = v.y; row[4 * i + 2] = v.z; row[4 * i + 3] = v.w;
    }
    const i64 blk = e / B, off = e - blk * B;
    shuffle_row<E>(row, out + blk * B * E + off / 8, B / 8, 4, out4);
}
