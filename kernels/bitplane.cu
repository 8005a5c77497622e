// The bit-plane integer codec on the GPU.  Launched by bitplane.py, which holds the NumPy twin
// these kernels must match byte for byte.
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
typedef unsigned int uint32_t;

typedef long long i64;
typedef unsigned long long u64;

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
