// Training samples of a column's blocks, gathered on the GPU (fsst_sample.py launches it; the
// CPU twin is the compiled trainer's sample_of, fsstgpu.native.sample_of, whose bytes and
// offsets these must equal byte for byte, so that the tables trained from them on the CPU are
// the ones fsstgpu.compress(level="fast") trains).
//
// One warp a block of strings lo:hi, every lane following the same draws (their loads are
// broadcasts), the lanes copying each piece's bytes side by side and lane 0 writing its end.
// A block's sample is, as train.cpp's sample_into takes it with spread on:
//   * all its strings, where they hold fewer than `target` bytes;
//   * else, where they hold fewer than SPREAD_RANGE samples' bytes, 512-byte pieces spread
//     evenly over them (spread_sample: a piece is taken when it reaches past a mark that each
//     taken piece moves on), about spread_bytes(raw, target) bytes;
//   * else random strings (a random 512-byte piece of longer ones) until `target` bytes:
//     draw k's string is lo + s_k % n, s_0 = mix(seed), s_k+1 = mix(mix(s_k)), an empty one
//     skipped for the next non-empty string (wrapping to lo), its piece from mix(s_k).
// `coord` holds the strings' ends as the CPU planner sees them (null strings empty), `src`
// where their bytes lie in `data` (the same array without nulls): string i's byte j is
// data[src[i] + j].  The launcher checked both before (inside the data, in order).
//
// Two passes: without `out_bytes` each warp writes its sample's bytes and offsets count to
// sizes[2 b], sizes[2 b + 1]; with it, the sample's bytes at out_bytes[byte_first[b]] and its
// offsets (from 0, one a piece and the leading 0) at out_offsets[piece_first[b]].

typedef unsigned char uint8_t;
typedef long long i64;
typedef unsigned long long u64;

#define SAMPLE_LINE 512    // train.h kSampleLine
#define SPREAD_RANGE 4     // train.h kSpreadRange

__device__ __forceinline__ u64 sample_mix(u64 x)   // train_round.h mix (SplitMix64)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// train.cpp's spread_bytes, every operation rounded alone (no fused multiply-add), so the
// sample's size is the CPU's bit for bit.
__device__ i64 sample_spread_bytes(i64 raw, i64 target)
{
    const double x = __ddiv_rn((double)target, (double)raw);
    double term = x, sum = 0.0;
    for (int k = 1; k <= 18; ++k) {
        sum = __dadd_rn(sum, term);
        term = __dmul_rn(term, __ddiv_rn(-x, (double)(k + 1)));
    }
    const i64 v = (i64)__dmul_rn((double)raw, sum);
    return v > 1 ? v : 1;
}

// Unsigned 128-bit values for spread_sample's mark (bytes * want overflows 64 bits).
struct U128 {
    u64 hi, lo;
};

__device__ __forceinline__ U128 mul128(u64 a, u64 b)
{
    return U128{__umul64hi(a, b), a * b};
}

__device__ __forceinline__ U128 add128(U128 a, U128 b)
{
    const u64 lo = a.lo + b.lo;
    return U128{a.hi + b.hi + (lo < a.lo), lo};
}

__device__ __forceinline__ bool le128(U128 a, U128 b)
{
    return a.hi < b.hi || (a.hi == b.hi && a.lo <= b.lo);
}

// A piece: `take` bytes from data[from], to the sample's byte `filled`; the warp copies it.
struct SampleOut {
    uint8_t* __restrict__ bytes;   // null in the sizes pass
    i64* __restrict__ offsets;
    int lane;

    __device__ __forceinline__ void piece(const uint8_t* __restrict__ data, i64 from, i64 filled,
                                          i64 take, i64 npiece) const
    {
        if (!bytes) return;
        for (i64 k = lane; k < take; k += 32) bytes[filled + k] = data[from + k];
        if (lane == 0) offsets[npiece] = filled + take;
    }
};

extern "C" __global__ void __launch_bounds__(256)
fsst_sample_blocks(const uint8_t* __restrict__ data, const i64* __restrict__ src,
                   const i64* __restrict__ coord, const i64* __restrict__ block_starts,
                   i64 nblocks, i64 target, u64 seed, i64* __restrict__ sizes,
                   const i64* __restrict__ byte_first, const i64* __restrict__ piece_first,
                   uint8_t* __restrict__ out_bytes, i64* __restrict__ out_offsets)
{
    const int lane = threadIdx.x & 31;
    const i64 warps = (i64)gridDim.x * (blockDim.x >> 5);
    for (i64 b = (i64)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); b < nblocks;
         b += warps) {
        const i64 lo = block_starts[b], hi = block_starts[b + 1];
        const i64 raw = coord[hi] - coord[lo];
        SampleOut out{out_bytes ? out_bytes + byte_first[b] : nullptr,
                      out_bytes ? out_offsets + piece_first[b] : nullptr, lane};
        i64 filled = 0, npieces = 0;
        if (raw >= target && raw / SPREAD_RANGE < target) {   // spread_sample
            const i64 want = sample_spread_bytes(raw, target);
            const i64 base = coord[lo];
            U128 mark{0, 0};
            for (i64 i = lo; i < hi && filled < want; ++i) {
                const i64 start = coord[i], end = coord[i + 1];
                for (i64 at = start; at < end && filled < want; at += SAMPLE_LINE) {
                    const i64 take = end - at < SAMPLE_LINE ? end - at : SAMPLE_LINE;
                    const U128 reach = mul128((u64)(at - base + take), (u64)want);
                    if (le128(reach, mark)) continue;
                    out.piece(data, src[i] + (at - start), filled, take, ++npieces);
                    filled += take;
                    const U128 moved = add128(mark, mul128((u64)take, (u64)raw));
                    mark = le128(reach, moved) ? moved : reach;
                }
            }
        } else if (raw < target) {   // all of them
            npieces = hi - lo;
            if (out_bytes) {
                const i64 first = coord[lo];
                for (i64 i = lo + lane; i < hi; i += 32) {
                    const i64 at = coord[i] - first, len = coord[i + 1] - coord[i];
                    for (i64 k = 0; k < len; ++k) out_bytes[byte_first[b] + at + k] =
                        data[src[i] + k];
                    out.offsets[i - lo + 1] = at + len;
                }
            }
            filled = raw;
        } else {   // draw_sample
            const u64 n = (u64)(hi - lo);
            u64 gen = sample_mix(seed);
            while (filled < target) {
                u64 state = gen;
                i64 line = lo + (i64)(n > 1 ? state % n : 0);
                gen = sample_mix(sample_mix(gen));
                while (coord[line + 1] == coord[line]) {   // an empty string: the next
                    if (++line == hi) line = lo;
                }
                const i64 ln = coord[line + 1] - coord[line];
                state = sample_mix(state);
                const i64 pieces = 1 + (ln - 1) / SAMPLE_LINE;
                const i64 start = pieces == 1 ? 0 : SAMPLE_LINE * (i64)(state % (u64)pieces);
                const i64 take = ln - start < SAMPLE_LINE ? ln - start : SAMPLE_LINE;
                out.piece(data, src[line] + start, filled, take, ++npieces);
                filled += take;
            }
        }
        if (lane == 0) {
            if (out_bytes) {
                out.offsets[0] = 0;
            } else {
                sizes[2 * b] = filled;
                sizes[2 * b + 1] = npieces + 1;
            }
        }
    }
}
