// Bit-plane transposition on the GPU: bitshuffle (HDF5/Blosc layout) and the bit-plane integer
// codec.  Launched by bitplane.py, which holds the NumPy twins these kernels must match byte for
// byte.
//
// bitshuffle / bitunshuffle (template E = element bytes, NT = threads per block)
//   A bitshuffle block of m elements (m a multiple of 8) becomes 8E planes of m/8 bytes; plane
//   p = 8j + k holds bit k of byte j of every element, element i at bit i%8 of byte i/8.  A CUDA
//   block takes a chunk of 32*NT elements of one bitshuffle block through shared memory (rows of
//   32 elements, padded by 4 bytes so that thread r reading row r hits distinct banks); thread r
//   turns its 32 elements into 8E plane words of 32 bits with 8x8 bit-matrix transposes in
//   registers (cheaper than 8E warp ballots per 32 elements: ~0.2 instructions per byte per warp),
//   and a warp stores 32 consecutive words of one plane at a time (128 coalesced bytes).
//   Unshuffle runs the same steps backwards.  Partial words (a block whose size is not a multiple
//   of 32, unaligned buffers) are written byte by byte; nothing outside the block is touched.
//
// bitplane_counts / bitplane_planes / bitplane_decode (template U = unsigned type of the values)
//   One warp per group of 32 values.  Values are transformed (optional wrapping delta against the
//   previous value, optional zigzag), the group's plane count is the bit width of the OR of its
//   values (__reduce_or_sync), and plane b is __ballot_sync of bit b (value i at bit i).  Decoding
//   reads the group's words at its offset (an inclusive scan of the counts done on the device by
//   the launcher) and rebuilds each lane's value with shuffles.  The decoder never reads past the
//   words it was given: a count above the value width, words missing, or words left over set bits
//   of *err (1, 2, 4) for the launcher to report.

// No headers (NVRTC): the fixed-width types are spelled out; identical to <cstdint> on Linux.
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;

typedef long long i64;
typedef unsigned long long u64;
typedef unsigned long long uptr;   // pointer as an integer

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

template <int E, int NT>
__global__ void __launch_bounds__(NT)
bitshuffle_kernel(const uint8_t* __restrict__ in, uint8_t* __restrict__ out, i64 B, i64 nfull,
                  i64 mlast, i64 cpb, int vec16, int out4) {
    typedef Row<E> R;
    __shared__ __align__(16) uint8_t sm[NT * R::STRIDE];
    const ChunkGeom g = chunk_geom(B, nfull, mlast, cpb, 32 * NT);
    if (!g.ok) return;
    const i64 nel = g.c1 - g.c0, nbytes = nel * E;
    const uint8_t* src = in + (g.blk * B + g.c0) * E;
    const int rows = (int)((nel + 31) / 32);

    // stage the chunk into padded rows (zeros past its end)
    if (vec16) {
        const i64 nw = nbytes >> 4;
        for (i64 w = threadIdx.x; w < nw; w += NT) {
            const uint4 v = __ldcs(reinterpret_cast<const uint4*>(src) + w);
            const i64 o = w << 4;
            uint32_t* d = reinterpret_cast<uint32_t*>(sm + (o / R::BYTES) * R::STRIDE + o % R::BYTES);
            d[0] = v.x; d[1] = v.y; d[2] = v.z; d[3] = v.w;
        }
        for (i64 o = (nw << 4) + threadIdx.x; o < nbytes; o += NT)
            sm[(o / R::BYTES) * R::STRIDE + o % R::BYTES] = src[o];
    } else {
        for (i64 o = threadIdx.x; o < nbytes; o += NT)
            sm[(o / R::BYTES) * R::STRIDE + o % R::BYTES] = src[o];
    }
    for (i64 o = nbytes + threadIdx.x; o < (i64)rows * R::BYTES; o += NT)
        sm[(o / R::BYTES) * R::STRIDE + o % R::BYTES] = 0;
    __syncthreads();

    const int r = threadIdx.x;
    if (r >= rows) return;
    const uint32_t* row = reinterpret_cast<const uint32_t*>(sm + r * R::STRIDE);
    const i64 ve = nel - 32 * (i64)r < 32 ? nel - 32 * (i64)r : 32;   // valid elements: 8..32
    const int vb = (int)(ve / 8);                                       // valid bytes per plane
    const bool whole = out4 && vb == 4 && (g.m % 32) == 0;
    uint8_t* dst = out + g.blk * B * E + (g.c0 + 32 * (i64)r) / 8;
    const i64 plane_bytes = g.m / 8;
#pragma unroll 1
    for (int j = 0; j < E; ++j) {
        u64 y[4];
#pragma unroll
        for (int q = 0; q < 4; ++q) y[q] = transpose8(gather<E>(row, q, j));
#pragma unroll
        for (int k = 0; k < 8; ++k) {
            const uint32_t word = pick4(y[0], y[1], y[2], y[3], k);
            uint8_t* p = dst + (i64)(8 * j + k) * plane_bytes;
            if (whole) {
                *reinterpret_cast<uint32_t*>(p) = word;
            } else {
                for (int b = 0; b < vb; ++b) p[b] = (uint8_t)(word >> (8 * b));
            }
        }
    }
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
        uint32_t* row = reinterpret_cast<uint32_t*>(sm + r * R::STRIDE);
        const i64 ve = nel - 32 * (i64)r < 32 ? nel - 32 * (i64)r : 32;
        const int vb = (int)(ve / 8);
        const bool whole = in4 && vb == 4 && (g.m % 32) == 0;
        const uint8_t* srcp = in + g.blk * B * E + (g.c0 + 32 * (i64)r) / 8;
        const i64 plane_bytes = g.m / 8;
#pragma unroll 1
        for (int jw = 0; jw < (E >= 4 ? E / 4 : 1); ++jw) {
            constexpr int JB = E >= 4 ? 4 : E;     // bytes j handled per pass
            u64 x[JB][4];
#pragma unroll
            for (int b = 0; b < JB; ++b) {
                const int j = 4 * jw + b;
                uint32_t w[8];
#pragma unroll
                for (int k = 0; k < 8; ++k) {
                    const uint8_t* p = srcp + (i64)(8 * j + k) * plane_bytes;
                    if (whole) {
                        w[k] = __ldcs(reinterpret_cast<const uint32_t*>(p));
                    } else {
                        uint32_t v = 0;
                        for (int c = 0; c < vb; ++c) v |= (uint32_t)p[c] << (8 * c);
                        w[k] = v;
                    }
                }
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
    __syncthreads();
    uint8_t* dstp = out + (g.blk * B + g.c0) * E;
    if (vec16) {
        const i64 nw = nbytes >> 4;
        for (i64 w = threadIdx.x; w < nw; w += NT) {
            const i64 o = w << 4;
            const uint32_t* s = reinterpret_cast<const uint32_t*>(sm + (o / R::BYTES) * R::STRIDE +
                                                                  o % R::BYTES);
            __stcs(reinterpret_cast<uint4*>(dstp) + w, make_uint4(s[0], s[1], s[2], s[3]));
        }
        for (i64 o = (nw << 4) + threadIdx.x; o < nbytes; o += NT)
            dstp[o] = sm[(o / R::BYTES) * R::STRIDE + o % R::BYTES];
    } else {
        for (i64 o = threadIdx.x; o < nbytes; o += NT)
            dstp[o] = sm[(o / R::BYTES) * R::STRIDE + o % R::BYTES];
    }
}

// ------------------------------------------------------------------------------------------------
// Bit-plane integer codec
// ------------------------------------------------------------------------------------------------

#define FULL 0xffffffffu

template <typename U>
__device__ __forceinline__ U transform(const U* __restrict__ in, i64 i, i64 n, int delta, int zig) {
    if (i >= n) return 0;
    U u = in[i];
    if (delta) u = (U)(u - (i > 0 ? in[i - 1] : (U)0));
    if (zig) {
        constexpr int W = 8 * sizeof(U);
        const U sign = (u >> (W - 1)) ? (U)~(U)0 : (U)0;   // all ones for a negative value
        u = (U)((U)(u << 1) ^ sign);
    }
    return u;
}

template <typename U>
__device__ __forceinline__ int bit_width_or(U u) {
    if (sizeof(U) == 8) {
        const uint32_t lo = __reduce_or_sync(FULL, (uint32_t)u);
        const uint32_t hi = __reduce_or_sync(FULL, (uint32_t)((u64)u >> 32));
        return hi ? 64 - __clz(hi) : (lo ? 32 - __clz(lo) : 0);
    } else {
        const uint32_t o = __reduce_or_sync(FULL, (uint32_t)u);
        return o ? 32 - __clz(o) : 0;
    }
}

template <typename U>
__global__ void bitplane_counts(const U* __restrict__ in, i64 n, int delta, int zig,
                                uint8_t* __restrict__ counts, i64 groups) {
    const i64 g = ((i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int lane = threadIdx.x & 31;
    if (g >= groups) return;                       // whole warps leave together
    const U u = transform<U>(in, g * 32 + lane, n, delta, zig);
    const int c = bit_width_or<U>(u);
    if (lane == 0) counts[g] = (uint8_t)c;
}

template <typename U>
__global__ void bitplane_planes(const U* __restrict__ in, i64 n, int delta, int zig,
                                const uint8_t* __restrict__ counts,
                                const i64* __restrict__ ends, uint32_t* __restrict__ words,
                                i64 groups) {
    const i64 g = ((i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int lane = threadIdx.x & 31;
    if (g >= groups) return;
    const U u = transform<U>(in, g * 32 + lane, n, delta, zig);
    const int c = counts[g];
    const i64 base = ends[g] - c;
    uint32_t keep0 = 0, keep1 = 0;
    for (int b = 0; b < c; ++b) {
        const uint32_t w = __ballot_sync(FULL, (unsigned)((u >> b) & 1));
        if ((b & 31) == lane) {
            if (b < 32) keep0 = w; else keep1 = w;
        }
    }
    if (lane < c) words[base + lane] = keep0;
    if (lane + 32 < c) words[base + 32 + lane] = keep1;
}

template <typename U>
__global__ void bitplane_decode(const uint32_t* __restrict__ words, i64 nwords,
                                const uint8_t* __restrict__ counts, const i64* __restrict__ ends,
                                i64 n, int zig, U* __restrict__ out, i64 groups,
                                int* __restrict__ err) {
    const i64 g = ((i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int lane = threadIdx.x & 31;
    if (g >= groups) return;
    constexpr int W = 8 * sizeof(U);
    int c = counts[g];
    const i64 base = ends[g] - c;
    int bad = 0;
    if (c > W) { bad |= 1; c = 0; }
    if (base + c > nwords) { bad |= 2; }
    if (g == groups - 1 && ends[g] != nwords) bad |= 4;
    if (bad && lane == 0) atomicOr(err, bad);
    // never read outside [0, nwords)
    const uint32_t w0 = (lane < c && base + lane < nwords) ? words[base + lane] : 0u;
    const uint32_t w1 = (lane + 32 < c && base + 32 + lane < nwords) ? words[base + 32 + lane] : 0u;
    U u = 0;
    for (int b = 0; b < c; ++b) {
        const uint32_t w = __shfl_sync(FULL, b < 32 ? w0 : w1, b & 31);
        u |= (U)((w >> lane) & 1u) << b;
    }
    if (zig) u = (U)((u >> 1) ^ (U)(0 - (U)(u & 1)));
    const i64 i = g * 32 + lane;
    if (i < n) out[i] = u;
}

// ================================================================================================
// Variant "flat" of bitshuffle / bitunshuffle (bitplane.py BITSHUFFLE_VARIANTS)
// ================================================================================================
// The kernels above give a CUDA block one chunk of ONE bitshuffle block, so with the default block
// sizes of wide elements (1024 elements of 8 bytes = 32 rows) most of a 128-thread block idles.
// The flat kernels cover the full bitshuffle blocks [0, nfull * B) as one flat run of elements cut
// into chunks of 32 * NT elements (B a multiple of 32, so every row of 32 elements lies in one
// bitshuffle block): row r of a chunk is elements e = c0 + 32r .. +32, of bitshuffle block e / B,
// at offset e % B, and every thread has a whole row.  The final partial block (if any) and the
// verbatim tail still go through the kernels above.  Per-row work is identical.

template <int E, int NT>
__global__ void __launch_bounds__(NT)
bitshuffle_flat(const uint8_t* __restrict__ in, uint8_t* __restrict__ out, i64 B, i64 total,
                int vec16, int out4) {
    typedef Row<E> R;
    __shared__ __align__(16) uint8_t sm[NT * R::STRIDE];
    const i64 c0 = (i64)blockIdx.x * (32 * NT);
    if (c0 >= total) return;
    const i64 nel = (total - c0 < 32 * NT) ? total - c0 : 32 * NT;   // a multiple of 32
    const i64 nbytes = nel * E;
    const uint8_t* src = in + c0 * E;
    const int rows = (int)(nel / 32);
    if (vec16) {
        const i64 nw = nbytes >> 4;
        for (i64 w = threadIdx.x; w < nw; w += NT) {
            const uint4 v = __ldcs(reinterpret_cast<const uint4*>(src) + w);
            const i64 o = w << 4;
            uint32_t* d = reinterpret_cast<uint32_t*>(sm + (o / R::BYTES) * R::STRIDE + o % R::BYTES);
            d[0] = v.x; d[1] = v.y; d[2] = v.z; d[3] = v.w;
        }
    } else {
        for (i64 o = threadIdx.x; o < nbytes; o += NT)
            sm[(o / R::BYTES) * R::STRIDE + o % R::BYTES] = src[o];
    }
    __syncthreads();
    const int r = threadIdx.x;
    if (r >= rows) return;
    const uint32_t* row = reinterpret_cast<const uint32_t*>(sm + r * R::STRIDE);
    const i64 e = c0 + 32 * (i64)r, blk = e / B, off = e - blk * B;
    uint8_t* dst = out + blk * B * E + off / 8;
    const i64 plane_bytes = B / 8;
#pragma unroll 1
    for (int j = 0; j < E; ++j) {
        u64 y[4];
#pragma unroll
        for (int q = 0; q < 4; ++q) y[q] = transpose8(gather<E>(row, q, j));
#pragma unroll
        for (int k = 0; k < 8; ++k) {
            const uint32_t word = pick4(y[0], y[1], y[2], y[3], k);
            uint8_t* p = dst + (i64)(8 * j + k) * plane_bytes;
            if (out4) {
                *reinterpret_cast<uint32_t*>(p) = word;
            } else {
#pragma unroll
                for (int b = 0; b < 4; ++b) p[b] = (uint8_t)(word >> (8 * b));
            }
        }
    }
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
    const i64 nbytes = nel * E;
    const int rows = (int)(nel / 32);
    const int r = threadIdx.x;
    if (r < rows) {
        uint32_t* row = reinterpret_cast<uint32_t*>(sm + r * R::STRIDE);
        const i64 e = c0 + 32 * (i64)r, blk = e / B, off = e - blk * B;
        const uint8_t* srcp = in + blk * B * E + off / 8;
        const i64 plane_bytes = B / 8;
#pragma unroll 1
        for (int jw = 0; jw < (E >= 4 ? E / 4 : 1); ++jw) {
            constexpr int JB = E >= 4 ? 4 : E;
            u64 x[JB][4];
#pragma unroll
            for (int b = 0; b < JB; ++b) {
                const int j = 4 * jw + b;
                uint32_t w[8];
#pragma unroll
                for (int k = 0; k < 8; ++k) {
                    const uint8_t* p = srcp + (i64)(8 * j + k) * plane_bytes;
                    if (in4) {
                        w[k] = __ldcs(reinterpret_cast<const uint32_t*>(p));
                    } else {
                        uint32_t v = 0;
#pragma unroll
                        for (int c = 0; c < 4; ++c) v |= (uint32_t)p[c] << (8 * c);
                        w[k] = v;
                    }
                }
#pragma unroll
                for (int q = 0; q < 4; ++q) {
                    const uint32_t lo = pick4w(w[0], w[1], w[2], w[3], q);
                    const uint32_t hi = pick4w(w[4], w[5], w[6], w[7], q);
                    x[b][q] = transpose8((u64)lo | ((u64)hi << 32));
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
    __syncthreads();
    uint8_t* dstp = out + c0 * E;
    if (vec16) {
        const i64 nw = nbytes >> 4;
        for (i64 w = threadIdx.x; w < nw; w += NT) {
            const i64 o = w << 4;
            const uint32_t* s = reinterpret_cast<const uint32_t*>(sm + (o / R::BYTES) * R::STRIDE +
                                                                  o % R::BYTES);
            __stcs(reinterpret_cast<uint4*>(dstp) + w, make_uint4(s[0], s[1], s[2], s[3]));
        }
    } else {
        for (i64 o = threadIdx.x; o < nbytes; o += NT)
            dstp[o] = sm[(o / R::BYTES) * R::STRIDE + o % R::BYTES];
    }
}

// ================================================================================================
// Variant "fused" of the bit-plane codec (bitplane.py CODEC_VARIANTS)
// ================================================================================================
// One kernel per direction.  A block takes a tile of TG = 8 * GPW groups (ticket from an atomic
// counter, so tiles start in ticket order), each warp GPW consecutive groups of 32 values.
//   pack:   values -> plane counts (written to the count bytes) -> the tile's word total ->
//           decoupled look-back -> word offset of each group -> ballots -> plane words.  Ticket 0
//           also writes the header and the zero padding; the last tile writes the total.
//   unpack: count bytes -> word offsets (look-back over word totals) -> decode (as
//           bitplane_decode, same bounds checks) -> with delta, a second look-back over the
//           tiles' value sums (wrapping) turns the deltas into values -> out.
// Look-back status of tile t: stat[3t] = flag (1: aggregate, 2: inclusive prefix), stat[3t + 1] =
// aggregate, stat[3t + 2] = inclusive prefix; values are written before the flag (st.release),
// read after it (ld.acquire, then ld.relaxed.gpu).  A tile only waits for smaller tiles, which
// were claimed by running blocks and never wait for larger ones: it cannot deadlock.  Every spin
// is bounded by timeout_ns (then *err |= 8 and the result is garbage).

__device__ __forceinline__ u64 bp_global_ns() {
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
__device__ __forceinline__ u64 ld_acquire64(const u64* p) {
    u64 v;
    asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ u64 ld_relaxed64(const u64* p) {
    u64 v;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void st_release64(u64* p, u64 v) {
    asm volatile("st.release.gpu.global.u64 [%0], %1;" :: "l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void st_relaxed64(u64* p, u64 v) {
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" :: "l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ u64 warp_sum64(u64 v) {
#pragma unroll
    for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(FULL, v, o);
    return v;
}

// Lane 0 only: publish tile t's aggregate (flag 1) or inclusive prefix (flag 2).
__device__ __forceinline__ void lb_publish(u64* stat, i64 t, int flag, u64 v) {
    st_relaxed64(stat + 3 * t + (flag == 1 ? 1 : 2), v);
    st_release64(stat + 3 * t, (u64)flag);
}

// All 32 lanes of one warp: exclusive prefix (wrapping sum) of the tiles before t.
__device__ u64 lookback(const u64* stat, i64 t, int* err, u64 timeout_ns) {
    const int lane = threadIdx.x & 31;
    u64 excl = 0, t0 = 0;
    for (i64 p = t - 1; p >= 0; p -= 32) {
        const i64 idx = p - lane;
        u64 f = idx >= 0 ? ld_acquire64(stat + 3 * idx) : 2;    // before tile 0: prefix 0
        while (__ballot_sync(FULL, f == 0)) {
            if (t0 == 0) t0 = bp_global_ns();
            const bool give_up = *(volatile int*)err != 0 || bp_global_ns() - t0 > timeout_ns;
            if (__any_sync(FULL, give_up)) {
                if (lane == 0) atomicOr(err, 8);
                return excl;
            }
            __nanosleep(32);
            if (f == 0) f = ld_acquire64(stat + 3 * idx);
        }
        u64 v = idx >= 0 ? ld_relaxed64(stat + 3 * idx + (f == 2 ? 2 : 1)) : 0;
        const unsigned incl = __ballot_sync(FULL, f == 2);
        if (incl) {
            const int k = __ffs(incl) - 1;          // nearest tile with an inclusive prefix
            if (lane > k) v = 0;
            return excl + warp_sum64(v);
        }
        excl += warp_sum64(v);
    }
    return excl;
}

template <typename U> __device__ __forceinline__ U shfl_idx(U v, int src) {
    if (sizeof(U) == 8) return (U)__shfl_sync(FULL, (u64)v, src);
    return (U)__shfl_sync(FULL, (uint32_t)v, src);
}
template <typename U> __device__ __forceinline__ U shfl_up1(U v, int d) {
    if (sizeof(U) == 8) return (U)__shfl_up_sync(FULL, (u64)v, d);
    return (U)__shfl_up_sync(FULL, (uint32_t)v, d);
}

#define FT 256            // threads of the fused kernels (8 warps)

template <typename U, int GPW>
__global__ void __launch_bounds__(FT)
bitplane_pack_fused(const U* __restrict__ in, i64 n, int delta, int zig, uint8_t* __restrict__ out,
                    i64 groups, i64 start, u64 head0, u64 head1, u64* stat,
                    unsigned* ticket, i64* total_words, int* err, u64 timeout_ns) {
    constexpr int TG = 8 * GPW;
    __shared__ u64 sh_t;
    __shared__ u64 wsum[8];
    __shared__ u64 wbase[8];
    if (threadIdx.x == 0) sh_t = atomicAdd(ticket, 1u);
    __syncthreads();
    const i64 t = (i64)sh_t, ntiles = (groups + TG - 1) / TG;
    const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (t == 0) {
        if (threadIdx.x == 0) {
            reinterpret_cast<u64*>(out)[0] = head0;
            reinterpret_cast<u64*>(out)[1] = head1;
        }
        for (i64 o = 16 + groups + threadIdx.x; o < start; o += FT) out[o] = 0;
    }
    const i64 g0 = t * TG + (i64)w * GPW;      // this warp's first group
    U u[GPW];
    int c[GPW];
    int total = 0;
#pragma unroll
    for (int q = 0; q < GPW; ++q) {
        u[q] = transform<U>(in, (g0 + q) * 32 + lane, n, delta, zig);
    }
#pragma unroll
    for (int q = 0; q < GPW; ++q) {
        c[q] = (g0 + q < groups) ? bit_width_or<U>(u[q]) : 0;   // warp-uniform
        total += c[q];
        if (lane == q && g0 + q < groups) out[16 + g0 + q] = (uint8_t)c[q];
    }
    if (lane == 0) wsum[w] = (u64)total;
    __syncthreads();
    if (w == 0) {
        const u64 mine = lane < 8 ? wsum[lane] : 0;
        u64 incl = mine;                         // inclusive scan over the 8 warps
#pragma unroll
        for (int o = 1; o < 8; o <<= 1) {
            const u64 x = __shfl_up_sync(FULL, incl, o);
            if (lane >= o) incl += x;
        }
        const u64 agg = __shfl_sync(FULL, incl, 7);
        u64 excl = 0;
        if (t == 0) {
            if (lane == 0) lb_publish(stat, 0, 2, agg);
        } else {
            if (lane == 0) lb_publish(stat, t, 1, agg);
            excl = lookback(stat, t, err, timeout_ns);
            if (lane == 0) lb_publish(stat, t, 2, excl + agg);
        }
        if (lane < 8) wbase[lane] = excl + incl - mine;
        if (lane == 0 && t == ntiles - 1) *total_words = (i64)(excl + agg);
    }
    __syncthreads();
    uint32_t* words = reinterpret_cast<uint32_t*>(out + start);
    i64 base = (i64)wbase[w];
#pragma unroll
    for (int q = 0; q < GPW; ++q) {
        const int cq = c[q];
        uint32_t keep0 = 0, keep1 = 0;
        for (int b = 0; b < cq; ++b) {
            const uint32_t x = __ballot_sync(FULL, (unsigned)((u[q] >> b) & 1));
            if ((b & 31) == lane) {
                if (b < 32) keep0 = x; else keep1 = x;
            }
        }
        if (lane < cq) words[base + lane] = keep0;
        if (lane + 32 < cq) words[base + 32 + lane] = keep1;
        base += cq;
    }
}

template <typename U, int GPW>
__global__ void __launch_bounds__(FT)
bitplane_unpack_fused(const uint8_t* __restrict__ buf, i64 start, i64 nwords, i64 n, int zig,
                      int delta, U* __restrict__ out, i64 groups, u64* stat_w, u64* stat_v,
                      unsigned* ticket, int* err, u64 timeout_ns) {
    constexpr int TG = 8 * GPW;
    constexpr int W = 8 * sizeof(U);
    constexpr int PER = TG / 32;                 // counts per lane of warp 0
    __shared__ u64 sh_t;
    __shared__ i64 gbase[TG];
    __shared__ int gcnt[TG];
    __shared__ u64 vsum[8];
    __shared__ u64 vbase[8];
    if (threadIdx.x == 0) sh_t = atomicAdd(ticket, 1u);
    __syncthreads();
    const i64 t = (i64)sh_t, ntiles = (groups + TG - 1) / TG;
    const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const uint8_t* counts = buf + 16;
    const uint32_t* words = reinterpret_cast<const uint32_t*>(buf + start);
    if (w == 0) {
        int cl[PER];
        u64 s = 0;
#pragma unroll
        for (int k = 0; k < PER; ++k) {
            const i64 g = t * TG + lane * PER + k;
            cl[k] = g < groups ? counts[g] : 0;
            s += (u64)cl[k];
        }
        u64 incl = s;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            const u64 x = __shfl_up_sync(FULL, incl, o);
            if (lane >= o) incl += x;
        }
        const u64 agg = __shfl_sync(FULL, incl, 31);
        u64 excl = 0;
        if (t == 0) {
            if (lane == 0) lb_publish(stat_w, 0, 2, agg);
        } else {
            if (lane == 0) lb_publish(stat_w, t, 1, agg);
            excl = lookback(stat_w, t, err, timeout_ns);
            if (lane == 0) lb_publish(stat_w, t, 2, excl + agg);
        }
        i64 e = (i64)(excl + incl - s);          // start of this lane's first group
        int bad = 0;
#pragma unroll
        for (int k = 0; k < PER; ++k) {
            const i64 g = t * TG + lane * PER + k;
            gbase[lane * PER + k] = e;
            gcnt[lane * PER + k] = cl[k];
            if (g < groups) {
                if (cl[k] > W) bad |= 1;
                if (e + cl[k] > nwords) bad |= 2;
                if (g == groups - 1 && e + cl[k] != nwords) bad |= 4;
            }
            e += cl[k];
        }
        if (bad) atomicOr(err, bad);
    }
    __syncthreads();
    U u[GPW];
#pragma unroll
    for (int q = 0; q < GPW; ++q) {
        const int gi = w * GPW + q;
        const i64 g = t * TG + gi;
        u[q] = 0;
        if (g >= groups) continue;              // warp-uniform
        int cq = gcnt[gi];
        const i64 base = gbase[gi];
        if (cq > W) cq = 0;
        const uint32_t w0 = (lane < cq && base + lane < nwords) ? words[base + lane] : 0u;
        const uint32_t w1 = (lane + 32 < cq && base + 32 + lane < nwords) ? words[base + 32 + lane]
                                                                          : 0u;
        U x = 0;
        for (int b = 0; b < cq; ++b) {
            const uint32_t ww = __shfl_sync(FULL, b < 32 ? w0 : w1, b & 31);
            x |= (U)((ww >> lane) & 1u) << b;
        }
        if (zig) x = (U)((x >> 1) ^ (U)(0 - (U)(x & 1)));
        u[q] = x;
    }
    if (delta) {
        // inclusive scan of the warp's GPW * 32 deltas in order (wrapping in U)
        U carry = 0;
#pragma unroll
        for (int q = 0; q < GPW; ++q) {
            U x = u[q];
#pragma unroll
            for (int o = 1; o < 32; o <<= 1) {
                const U y = shfl_up1<U>(x, o);
                if (lane >= o) x = (U)(x + y);
            }
            u[q] = (U)(x + carry);
            carry = shfl_idx<U>(u[q], 31);
        }
        if (lane == 0) vsum[w] = (u64)carry;
        __syncthreads();
        if (w == 0) {
            const u64 mine = lane < 8 ? vsum[lane] : 0;
            u64 incl = mine;
#pragma unroll
            for (int o = 1; o < 8; o <<= 1) {
                const u64 x = __shfl_up_sync(FULL, incl, o);
                if (lane >= o) incl += x;
            }
            const u64 agg = __shfl_sync(FULL, incl, 7);
            u64 excl = 0;
            if (t == 0) {
                if (lane == 0) lb_publish(stat_v, 0, 2, agg);
            } else {
                if (lane == 0) lb_publish(stat_v, t, 1, agg);
                excl = lookback(stat_v, t, err, timeout_ns);
                if (lane == 0) lb_publish(stat_v, t, 2, excl + agg);
            }
            if (lane < 8) vbase[lane] = excl + incl - mine;
        }
        __syncthreads();
        const U add = (U)vbase[w];
#pragma unroll
        for (int q = 0; q < GPW; ++q) u[q] = (U)(u[q] + add);
    }
#pragma unroll
    for (int q = 0; q < GPW; ++q) {
        const i64 i = (t * TG + w * GPW + q) * 32 + lane;
        if (i < n) out[i] = u[q];
    }
    (void)ntiles;
}
