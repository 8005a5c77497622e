// The bit-plane integer codec on the GPU, layout FBP2 (specified in bitplane.py, whose NumPy twin
// in bitplane_cpu.py these kernels match byte for byte).  One kernel per direction, no host sync.
//
// Work unit: one superblock (SB_GROUPS = 128 groups of 32 values = 4096 values) per CUDA block of
// NT = 256 threads; warp w owns groups 16w .. 16w + 15 of it, lane i value i of each group.
//
//   bitplane_pack    loads its 16 values per thread up front (16 independent loads in flight per
//                    thread), transforms them (delta against the previous value, zigzag: both
//                    template parameters), takes each group's plane count (__reduce_or_sync),
//                    writes the count bytes, scans words and value sums over the block, and
//                    builds its plane words in shared memory (32 x 32 bit transposes).  Then
//                    warp 0 finds the superblock's first word and prefix (two running sums:
//                    words, values) by a single-pass decoupled look-back over superblocks claimed
//                    in ticket order, and the block streams its words out (16-byte stores for
//                    the aligned body).
//   bitplane_unpack  reads index entries s, s + 1 and its 128 count bytes, scans the counts,
//                    copies its words (16-byte loads) into shared memory, rebuilds each lane's
//                    value from broadcast shared reads, un-zigzags, and for delta adds prefix[s]
//                    to an inclusive block scan.  Blocks never wait on each other.
//   bitplane_unpack_offsets  the same decode of unsigned lengths into Arrow offsets: prefix[s] +
//                    exclusive block scan, int32 or int64, the last block writing offsets[n].
//
// Why this should stream at copy speed: traffic is input + packed bytes, each touched once by
// 16-byte or full-warp 4-byte accesses.  Memory-level parallelism: pack keeps 16 loads per thread
// (64-128 B) in flight, unpack one or more 16-byte loads per thread, with 4+ resident blocks per SM
// (registers ~64-80 per thread, shared memory <= 33 KB per block) that is > 32 KB in flight per
// SM, above the ~20 KB an H200 SM needs to cover DRAM latency.  Shared-memory traffic is broadcast
// reads (decode) or lane-consecutive words (staging): no bank conflicts worth counting.  The
// look-back waits only on the previous superblocks' aggregates, published right after their loads,
// and reads a status in one relaxed 16-byte load: the look-back's latency is on every block's
// critical path (BENCHMARKS.md section 37: with acquire loads it was 40% of the pack's time).
//
// Corruption (unpack kernels): every byte read is bounds-checked against the host-given sizes; a
// block whose index entries or counts are inconsistent decodes zeros instead of reading words.
// Bits of *err: 1 count above the value width, 2 word index does not match the counts, 4 buffer
// length does not match the index total, 8 prefix sums do not match the values, 16 header does
// not match (magic, dtype, n, flags), 32 non-canonical (top plane zero, bits past n, padding not
// zero), 64 offsets overflow int32/int64.  Pack: 128 look-back timeout.

typedef unsigned char uint8_t;
typedef unsigned int uint32_t;
typedef long long i64;
typedef unsigned long long u64;

#include "sync.cuh"

#define FULL 0xffffffffu
#define NT 256                 // threads per block (8 warps)
#ifndef BP_MINB
#define BP_MINB 4              // resident blocks per SM asked of the register allocator
#endif
#ifndef BP_MINB_U32
#define BP_MINB_U32 5          // the same for 32-bit values: 5 blocks (<= 51 registers)
#endif
// 32-bit values fit 5 blocks without spills (8-, 16- and 64-bit ones spill there); the H200 A/B:
// pack 27-28 -> 30-31% of copy, unpack 40-42 -> 45%, unpack_offsets 53-55 -> 55-57%
template <typename U> struct MinBlocks {
    static constexpr int v = sizeof(U) == 4 ? BP_MINB_U32 : BP_MINB;
};
// Pack keeps no values past its planes and waits on its look-back: more resident blocks hide that
// wait (H200, 1 GiB, section 37: 32-bit lengths 710 -> 667 us with 6 blocks, 40 registers and no
// spills; sorted 64-bit deltas 576 -> 551 with 5)
#ifndef BP_PACK_MINB_U32
#define BP_PACK_MINB_U32 6
#endif
#ifndef BP_PACK_MINB
#define BP_PACK_MINB 5
#endif
template <typename U> struct PackBlocks {
    static constexpr int v = sizeof(U) == 4 ? BP_PACK_MINB_U32 : BP_PACK_MINB;
};
#define GPW 16                 // groups per warp
#define SB_GROUPS 128          // groups per superblock (bitplane_cpu.SUPERBLOCK_GROUPS)
#define VALID (1ull << 63)     // look-back status flag bit

#include "warp_transpose.cuh"

__device__ __forceinline__ u64 warp_sum(u64 v) {
#pragma unroll
    for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(FULL, v, o);
    return v;
}
template <typename U> __device__ __forceinline__ U shfl_up(U v, int d) {
    if (sizeof(U) == 8) return (U)__shfl_up_sync(FULL, (u64)v, d);
    return (U)__shfl_up_sync(FULL, (uint32_t)v, d);
}
template <typename U> __device__ __forceinline__ U shfl_at(U v, int src) {
    if (sizeof(U) == 8) return (U)__shfl_sync(FULL, (u64)v, src);
    return (U)__shfl_sync(FULL, (uint32_t)v, src);
}
template <typename U> __device__ __forceinline__ U warp_incl_scan(U v, int lane) {
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const U x = shfl_up<U>(v, o);
        if (lane >= o) v = (U)(v + x);
    }
    return v;
}
template <typename U> __device__ __forceinline__ U zigzag(U d) {
    const U sign = (d >> (8 * sizeof(U) - 1)) ? (U)~(U)0 : (U)0;
    return (U)((U)(d << 1) ^ sign);
}
template <typename U> __device__ __forceinline__ U unzigzag(U z) {
    return (U)((z >> 1) ^ (U)(0 - (U)(z & 1)));
}
template <typename U> __device__ __forceinline__ int group_width(U u) {   // whole warp
    if (sizeof(U) == 8) {
        const uint32_t lo = __reduce_or_sync(FULL, (uint32_t)u);
        const uint32_t hi = __reduce_or_sync(FULL, (uint32_t)((u64)u >> 32));
        return hi ? 64 - __clz(hi) : (lo ? 32 - __clz(lo) : 0);
    }
    const uint32_t o = __reduce_or_sync(FULL, (uint32_t)u);
    return o ? 32 - __clz(o) : 0;
}

// Both directions move a quad of groups (4 x 32 values) through transposes: four groups of at
// most 8 planes share one (group k in bits 8k..8k+7 of each lane's row, so lane 8k + b holds
// group k's plane b), two of at most 16 share one, wider groups take one each (two for planes
// 32..63).  Plane counts and offsets are warp-uniform, so every branch is.
__device__ __forceinline__ int pick4i(int k, int a, int b, int c, int d) {
    return k == 0 ? a : k == 1 ? b : k == 2 ? c : d;
}

// Values of superblock t that exist (1..4096): indices inside a superblock are 32-bit, so the
// per-value bounds tests and addresses cost one instruction instead of a 64-bit pair.
__device__ __forceinline__ int block_values(i64 n, i64 t) {
    const i64 left = n - t * (SB_GROUPS * 32);
    return left < SB_GROUPS * 32 ? (int)left : SB_GROUPS * 32;
}

// Inclusive scans over the warp of two groups' values a and b (lane i holds value i of each) as
// cheaply as their width allows: all below 2**11, one 32-bit scan of two 16-bit fields
// (32 * 2047 < 2**16, no carry between them); below 2**26, two 32-bit scans (32 * 2**26 < 2**31);
// else two 64-bit scans.  sa, sb: the lane's inclusive prefixes; ta, tb: the groups' totals
// (modulo 2**64; exact in the narrow cases).  A 64-bit scan costs ~30 instructions a group, the
// offsets kernel's largest item in the profile (123 warp instructions a group).
template <typename U>
__device__ __forceinline__ void scan_pair(U a, U b, int lane, u64& sa, u64& sb, u64& ta,
                                          u64& tb) {
    const u64 ab = (u64)a | (u64)b;
    const uint32_t hi = sizeof(U) == 8 ? __reduce_or_sync(FULL, (uint32_t)(ab >> 32)) : 0u;
    const uint32_t lo = __reduce_or_sync(FULL, (uint32_t)ab);
    if (!hi && lo < 2048u) {
        const uint32_t p = warp_incl_scan<uint32_t>((uint32_t)a | ((uint32_t)b << 16), lane);
        const uint32_t t = __shfl_sync(FULL, p, 31);
        sa = p & 0xffffu; sb = p >> 16; ta = t & 0xffffu; tb = t >> 16;
    } else if (!hi && lo < (1u << 26)) {
        const uint32_t pa = warp_incl_scan<uint32_t>((uint32_t)a, lane);
        const uint32_t pb = warp_incl_scan<uint32_t>((uint32_t)b, lane);
        sa = pa; sb = pb;
        ta = __shfl_sync(FULL, pa, 31); tb = __shfl_sync(FULL, pb, 31);
    } else {
        sa = warp_incl_scan<u64>((u64)a, lane);
        sb = warp_incl_scan<u64>((u64)b, lane);
        ta = shfl_at<u64>(sa, 31); tb = shfl_at<u64>(sb, 31);
    }
}

// Pack: the plane words of the warp's 16 groups into s_words from word `off` on (group after
// group, c_q words each: plane b of group q is word off_q + b, bit i = value i's bit b).  Lane q
// holds c_q in `cnt`; the counts are read per quad (no per-group array holding registers).
template <typename U>
__device__ __forceinline__ void store_planes(const U (&z)[GPW], int cnt, int off,
                                             uint32_t* s_words, int lane) {
#pragma unroll
    for (int q = 0; q < GPW; q += 4) {
        int c[4];                                      // groups q .. q+3
#pragma unroll
        for (int k = 0; k < 4; ++k) c[k] = __shfl_sync(FULL, cnt, q + k);
        const int o0 = off, o1 = o0 + c[0], o2 = o1 + c[1], o3 = o2 + c[2];
        off = o3 + c[3];
        const int mw = max(max(c[0], c[1]), max(c[2], c[3]));
        if (mw <= 8) {
            const uint32_t row = (uint32_t)z[q] | ((uint32_t)z[q + 1] << 8)
                               | ((uint32_t)z[q + 2] << 16) | ((uint32_t)z[q + 3] << 24);
            const uint32_t t = warp_transpose32(row, lane);
            const int k = lane >> 3, b = lane & 7;
            if (b < pick4i(k, c[0], c[1], c[2], c[3]))
                s_words[pick4i(k, o0, o1, o2, o3) + b] = t;
        } else if (mw <= 16) {
            const int k = lane >> 4, b = lane & 15;
            const uint32_t t0 = warp_transpose32((uint32_t)z[q] | ((uint32_t)z[q + 1] << 16), lane);
            if (b < (k ? c[1] : c[0])) s_words[(k ? o1 : o0) + b] = t0;
            const uint32_t t1 = warp_transpose32((uint32_t)z[q + 2] | ((uint32_t)z[q + 3] << 16),
                                                 lane);
            if (b < (k ? c[3] : c[2])) s_words[(k ? o3 : o2) + b] = t1;
        } else {
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                const int ok = pick4i(k, o0, o1, o2, o3);
                const uint32_t t = warp_transpose32((uint32_t)z[q + k], lane);
                if (lane < c[k]) s_words[ok + lane] = t;
                if (sizeof(U) == 8 && c[k] > 32) {
                    const uint32_t h = warp_transpose32((uint32_t)((u64)z[q + k] >> 32), lane);
                    if (lane + 32 < c[k]) s_words[ok + 32 + lane] = h;
                }
            }
        }
    }
}

// Unpack: the stored values (before un-zigzag) of groups q .. q+3 of the warp from s_words; the
// lanes' cnt (group q's plane count in lane q) and o (its plane 0's word offset in lane q) are
// read per quad, so no per-group arrays hold registers.  Sets bad |= 32 when a group's top plane
// is zero (non-canonical).  Groups of at most 8 planes (string lengths below 256, the codec's
// common case) take one shuffle of each lane's own group's count and offset and one max-reduction,
// no per-lane selects among the quad's four (H200, 1 GiB of 32-bit lengths < 200: unpack 50.1 ->
// 52.6% of copy, offsets 58.6 -> 60.7; the wider cases keep the four-group shuffles, 1-2% slower
// for the extra two instructions; BENCHMARKS.md section 38).  Pack's planes tried the same way
// gained nothing.
template <typename U>
__device__ __forceinline__ void load_quad(const uint32_t* s_words, int cnt, int o, int q,
                                          U (&u)[4], int lane, int& bad) {
    const int c8 = __shfl_sync(FULL, cnt, q + (lane >> 3));
    const int mw = (int)__reduce_max_sync(FULL, (uint32_t)c8);
    if (mw <= 8) {
        const int b = lane & 7, o8 = __shfl_sync(FULL, o, q + (lane >> 3));
        const uint32_t w = b < c8 ? s_words[o8 + b] : 0u;
        if (b == c8 - 1 && w == 0) bad |= 32;
        const uint32_t t = warp_transpose32(w, lane);
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) u[kk] = (U)((t >> (8 * kk)) & 0xffu);
        return;
    }
    int c[4], off[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        c[k] = __shfl_sync(FULL, cnt, q + k);
        off[k] = __shfl_sync(FULL, o, q + k);
    }
    if (mw <= 16) {
        const int k = lane >> 4, b = lane & 15;
#pragma unroll
        for (int h = 0; h < 4; h += 2) {
            const int ck = k ? c[h + 1] : c[h];
            const uint32_t w = b < ck ? s_words[(k ? off[h + 1] : off[h]) + b] : 0u;
            if (b == ck - 1 && w == 0) bad |= 32;
            const uint32_t t = warp_transpose32(w, lane);
            u[h] = (U)(t & 0xffffu);
            u[h + 1] = (U)(t >> 16);
        }
    } else {
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const uint32_t w = lane < c[k] ? s_words[off[k] + lane] : 0u;
            if (lane == c[k] - 1 && w == 0) bad |= 32;
            U x = (U)warp_transpose32(w, lane);
            if (sizeof(U) == 8 && c[k] > 32) {
                const uint32_t w2 = lane + 32 < c[k] ? s_words[off[k] + 32 + lane] : 0u;
                if (lane + 32 == c[k] - 1 && w2 == 0) bad |= 32;
                x = (U)((u64)x | ((u64)warp_transpose32(w2, lane) << 32));
            }
            u[k] = x;
        }
    }
}

// ---- pack ----------------------------------------------------------------------------------------
#include "bitplane_lookback.cuh"

// DELTA: store differences of consecutive values; ZIG: zigzag them (signed values or DELTA).
template <typename U, int DELTA, int ZIG>
__global__ void __launch_bounds__(NT, PackBlocks<U>::v)
bitplane_pack(const U* __restrict__ in, i64 n, i64 groups, i64 sblocks,
              uint8_t* __restrict__ out, i64 index_start, i64 words_start, u64 head0, u64 head1,
              u64* stat, unsigned* ticket, i64* nbytes, int* err, u64 timeout_ns) {
    constexpr int W = 8 * sizeof(U);
    constexpr bool delta = DELTA, zig = ZIG;
    __shared__ uint32_t s_words[SB_GROUPS * W];
    __shared__ u64 s_wv[8];
    __shared__ int s_ww[8];
    __shared__ u64 s_base;
    __shared__ i64 s_t;
    if (threadIdx.x == 0) s_t = (i64)atomicAdd(ticket, 1u);
    __syncthreads();
    const i64 t = s_t;
    if (t >= sblocks) return;                          // whole block
    const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (t == 0 && threadIdx.x == 0) {
        reinterpret_cast<u64*>(out)[0] = head0;
        reinterpret_cast<u64*>(out)[1] = head1;
    }
    const i64 g0 = t * SB_GROUPS + w * GPW;           // this warp's first group
    const int nloc = block_values(n, t), i0 = w * GPW * 32 + lane;
    const U* inb = in + t * (SB_GROUPS * 32);
    U z[GPW];
#pragma unroll
    for (int q = 0; q < GPW; ++q) z[q] = (i0 + 32 * q < nloc) ? inb[i0 + 32 * q] : (U)0;
    U before = (delta && g0 > 0 && g0 * 32 - 1 < n) ? in[g0 * 32 - 1] : (U)0;
    u64 vsum = 0;
    int mine = 0, wtot = 0;                            // lane q: group q's plane count
#pragma unroll
    for (int q = 0; q < GPW; ++q) {
        const U raw = z[q];
        U d = raw;
        if constexpr (delta) {
            U prev = shfl_up<U>(raw, 1);
            const U last = shfl_at<U>(raw, 31);
            if (lane == 0) prev = before;
            before = last;
            d = (U)(raw - prev);
        }
        if (i0 + 32 * q >= nloc) d = 0;
        vsum += (u64)d;
        z[q] = zig ? zigzag<U>(d) : d;
        const int cq = group_width<U>(z[q]);          // warp-uniform; 0 past the end
        wtot += cq;
        if (lane == q) mine = cq;
    }
    if (lane < GPW && g0 + lane < groups) out[16 + g0 + lane] = (uint8_t)mine;
    vsum = warp_sum(vsum);
    if (lane == 0) { s_ww[w] = wtot; s_wv[w] = vsum; }
    __syncthreads();
    int off = 0, total = 0;
    u64 vtotal = 0;
#pragma unroll
    for (int k = 0; k < 8; ++k) {
        off += k < w ? s_ww[k] : 0;
        total += s_ww[k];
        vtotal += s_wv[k];
    }
    // every warp's planes before warp 0's look-back, which then waits with nothing of its own
    // left to do (section 37: 852 -> 782 us at 1 GiB of 32-bit lengths)
    store_planes<U>(z, mine, off, s_words, lane);
    if (w == 0) {                                      // the superblock's place in the output
        u64* st = stat + 4 * t;
        u64 ex_w = 0, ex_v = 0;
        if (t == 0) {
            if (lane == 0) publish(st, 1, (u64)total, vtotal);
        } else {
            if (lane == 0) publish(st, 0, (u64)total, vtotal);
            look_back(stat, t, err, timeout_ns, ex_w, ex_v);
            if (lane == 0) publish(st, 1, ex_w + total, ex_v + vtotal);
        }
        if (lane == 0) {
            u64* index = reinterpret_cast<u64*>(out + index_start);
            index[2 * t] = ex_w;
            index[2 * t + 1] = ex_v;
            s_base = ex_w;
            if (t == sblocks - 1) {
                index[2 * t + 2] = ex_w + total;
                index[2 * t + 3] = ex_v + vtotal;
                for (i64 o = 16 + groups; o < index_start; ++o) out[o] = 0;
                *nbytes = *(volatile int*)err ? (i64)-1 : words_start + 4 * (i64)(ex_w + total);
            }
        }
    }
    __syncthreads();
    // stream the words out: scalar head up to a 16-byte boundary, uint4 body, scalar tail
    uint32_t* dst = reinterpret_cast<uint32_t*>(out + words_start) + (i64)s_base;
    int head = (int)((4 - (((u64)dst >> 2) & 3)) & 3);
    if (head > total) head = total;
    if ((int)threadIdx.x < head) dst[threadIdx.x] = s_words[threadIdx.x];
    const int nvec = (total - head) >> 2;
    uint4* vdst = reinterpret_cast<uint4*>(dst + head);
    for (int k = threadIdx.x; k < nvec; k += NT) {
        const uint32_t* s = s_words + head + 4 * k;
        vdst[k] = make_uint4(s[0], s[1], s[2], s[3]);
    }
    const int tail0 = head + 4 * nvec;
    if (tail0 + (int)threadIdx.x < total) dst[tail0 + threadIdx.x] = s_words[tail0 + threadIdx.x];
}

// ---- unpack --------------------------------------------------------------------------------------
// Shared front half of both decoders: validate, stage words, rebuild the lanes' stored values
// (un-zigzagged) of the warp's 16 groups into v[]; returns this block's (prefix[s], prefix[s+1]).

struct Sizes {
    i64 n, groups, sblocks, index_start, words_start, nwords;  // nwords: plane words in the buffer
    u64 head0, head1, head0_mask;                            // expected header (flags masked)
    int is_signed;                                           // zigzag flag = signed | delta
};
// The launchers pass the fields one by one (plain scalars for cupy.RawKernel).
#define SIZES_PARAMS i64 n, i64 groups, i64 sblocks, i64 index_start, i64 words_start, \
    i64 nwords, u64 head0, u64 head1, u64 head0_mask, int is_signed
#define SIZES_INIT {n, groups, sblocks, index_start, words_start, nwords, head0, head1, \
    head0_mask, is_signed}

// The warp's 16 groups' values from the staged words (un-zigzagged when ZIG); WHOLE: the block's
// superblock holds 4096 values, so no value lies past n.  Both compile-time (a bounds test and a
// select a value fewer; H200, 1 GiB of 32-bit lengths: unpack 767 -> 657 us, BENCHMARKS.md
// section 37).
template <typename U, bool ZIG, bool WHOLE>
__device__ __forceinline__ void stored_values(const uint32_t* s_words, int cnt, int o, int nloc,
                                              U (&v)[GPW], int lane, int w, int& bad) {
#pragma unroll
    for (int q = 0; q < GPW; q += 4) {
        U u[4];
        load_quad<U>(s_words, cnt, o, q, u, lane, bad);
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            U x = u[k];
            if (!WHOLE && (w * GPW + q + k) * 32 + lane >= nloc) { if (x) bad |= 32; x = 0; }
            v[q + k] = ZIG ? unzigzag<U>(x) : x;
        }
    }
}

template <typename U>
__device__ __forceinline__ void decode_block(const uint8_t* __restrict__ buf, const Sizes& z,
                                             int* err, int want_flags, U (&v)[GPW], u64& p0,
                                             u64& p1, int& flags, uint32_t* s_words, int* s_ww,
                                             u64* s_misc) {
    constexpr int W = 8 * sizeof(U);
    const i64 s = blockIdx.x;
    const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int bad = 0;
    if (threadIdx.x == 0) {
        const u64* h = reinterpret_cast<const u64*>(buf);
        const u64* index = reinterpret_cast<const u64*>(buf + z.index_start);
        const u64 h0 = h[0];
        const int f = (int)((h0 >> 40) & 0xff);
        if ((h0 & z.head0_mask) != z.head0 || h[1] != z.head1 || f & ~3 ||
            ((f >> 1) & 1) != (z.is_signed | (f & 1)) || (want_flags >= 0 && f != want_flags))
            bad |= 16;
        u64 ws0 = index[2 * s], ws1 = index[2 * s + 2];
        s_misc[2] = index[2 * s + 1];
        s_misc[3] = index[2 * s + 3];
        if (s == 0 && (ws0 != 0 || s_misc[2] != 0)) bad |= 2;
        if (s == z.sblocks - 1) {
            if (ws1 != (u64)z.nwords) bad |= 4;
            for (i64 o = 16 + z.groups; o < z.index_start; ++o) if (buf[o]) bad |= 32;
        }
        if (ws0 > ws1 || ws1 > (u64)z.nwords || ws1 - ws0 > (u64)(SB_GROUPS * W)) {
            bad |= 2; ws0 = ws1 = 0;
        }
        s_misc[0] = ws0;
        s_misc[1] = ws1;
        s_ww[8] = f;
    }
    const i64 g0 = s * SB_GROUPS + w * GPW;
    int cnt = (lane < GPW && g0 + lane < z.groups) ? buf[16 + g0 + lane] : 0;
    if (cnt > W) { bad |= 1; cnt = 0; }
    int incl = cnt;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const int x = __shfl_up_sync(FULL, incl, o);
        if (lane >= o) incl += x;
    }
    if (lane == 31) s_ww[w] = incl;
    __syncthreads();
    int total = 0, woff = 0;
#pragma unroll
    for (int k = 0; k < 8; ++k) { woff += k < w ? s_ww[k] : 0; total += s_ww[k]; }
    flags = s_ww[8];
    const u64 ws0 = s_misc[0];
    p0 = s_misc[2];
    p1 = s_misc[3];
    const bool ok = s_misc[1] - ws0 == (u64)total;
    if (!ok && threadIdx.x == 0) bad |= 2;
    // stage words [ws0, ws0 + total) at s_words[sh ...], sh = ws0 % 4, so the aligned body of the
    // global range lands on 16-byte shared slots
    const uint32_t* words = reinterpret_cast<const uint32_t*>(buf + z.words_start);
    const int sh = (int)(((u64)(words + ws0) >> 2) & 3);   // words are 4-byte aligned
    const int n_ok = ok ? total : 0;
    const int head = (4 - sh) & 3;
    if ((int)threadIdx.x < head && (int)threadIdx.x < n_ok)
        s_words[sh + threadIdx.x] = words[ws0 + threadIdx.x];
    const int nvec = n_ok > head ? (n_ok - head) >> 2 : 0;
    const uint4* src = reinterpret_cast<const uint4*>(words + ws0 + head);
#pragma unroll 4
    for (int k = threadIdx.x; k < nvec; k += NT)
        reinterpret_cast<uint4*>(s_words)[1 + k - (sh == 0)] = __ldcs(src + k);
    const int tail0 = n_ok > head ? head + 4 * nvec : n_ok;
    if (tail0 + (int)threadIdx.x < n_ok)
        s_words[sh + tail0 + threadIdx.x] = words[ws0 + tail0 + threadIdx.x];
    __syncthreads();
    int excl = incl - cnt + woff;
    const int cnt_ok = ok ? cnt : 0, o = sh + excl, nloc = block_values(z.n, s);
    // block-uniform: a whole superblock (all but the last) needs no per-value bounds
    if (nloc == SB_GROUPS * 32) {
        if (flags & 2) stored_values<U, true, true>(s_words, cnt_ok, o, nloc, v, lane, w, bad);
        else stored_values<U, false, true>(s_words, cnt_ok, o, nloc, v, lane, w, bad);
    } else {
        if (flags & 2) stored_values<U, true, false>(s_words, cnt_ok, o, nloc, v, lane, w, bad);
        else stored_values<U, false, false>(s_words, cnt_ok, o, nloc, v, lane, w, bad);
    }
    bad = __reduce_or_sync(FULL, bad);
    if (bad && lane == 0) atomicOr(err, bad);
}

template <typename U>
__global__ void __launch_bounds__(NT, MinBlocks<U>::v)
bitplane_unpack(const uint8_t* __restrict__ buf, SIZES_PARAMS, U* __restrict__ out, int* err) {
    const Sizes z = SIZES_INIT;
    constexpr int W = 8 * sizeof(U);
    __shared__ __align__(16) uint32_t s_words[SB_GROUPS * W + 4];
    __shared__ int s_ww[9];
    __shared__ u64 s_misc[4];
    __shared__ u64 s_wsum[8];
    U v[GPW];
    u64 p0, p1;
    int flags;
    decode_block<U>(buf, z, err, -1, v, p0, p1, flags, s_words, s_ww, s_misc);
    const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
    u64 sum = 0;
#pragma unroll
    for (int q = 0; q < GPW; ++q) sum += (u64)v[q];
    sum = warp_sum(sum);
    if (lane == 0) s_wsum[w] = sum;
    __syncthreads();
    u64 base = p0, all = 0;
#pragma unroll
    for (int k = 0; k < 8; ++k) { base += k < w ? s_wsum[k] : 0; all += s_wsum[k]; }
    if (threadIdx.x == 0 && p0 + all != p1) atomicOr(err, 8);
    const int nloc = block_values(z.n, blockIdx.x), i0 = w * GPW * 32 + lane;
    U* outb = out + (i64)blockIdx.x * (SB_GROUPS * 32);
    if (flags & 1) {                                   // delta: the values are prefix sums
        u64 carry = base;
#pragma unroll
        for (int q = 0; q < GPW; q += 2) {
            u64 sa, sb, ta, tb;
            scan_pair<U>(v[q], v[q + 1], lane, sa, sb, ta, tb);
            if (i0 + 32 * q < nloc) outb[i0 + 32 * q] = (U)(carry + sa);
            carry += ta;
            if (i0 + 32 * q + 32 < nloc) outb[i0 + 32 * q + 32] = (U)(carry + sb);
            carry += tb;
        }
    } else if (nloc == SB_GROUPS * 32) {               // block-uniform: no bounds to test
#pragma unroll
        for (int q = 0; q < GPW; ++q) outb[i0 + 32 * q] = v[q];
    } else {
#pragma unroll
        for (int q = 0; q < GPW; ++q)
            if (i0 + 32 * q < nloc) outb[i0 + 32 * q] = v[q];
    }
}

template <typename U, typename O>
__global__ void __launch_bounds__(NT, MinBlocks<U>::v)
bitplane_unpack_offsets(const uint8_t* __restrict__ buf, SIZES_PARAMS, uint8_t* __restrict__ dst,
                        int* err) {
    const Sizes z = SIZES_INIT;
    constexpr int W = 8 * sizeof(U);
    constexpr u64 LIMIT = sizeof(O) == 8 ? 0x7fffffffffffffffull : 0x7fffffffull;
    __shared__ __align__(16) uint32_t s_words[SB_GROUPS * W + 4];
    __shared__ int s_ww[9];
    __shared__ u64 s_misc[4];
    __shared__ u64 s_wsum[8];
    U v[GPW];
    u64 p0, p1;
    int flags;
    decode_block<U>(buf, z, err, 0, v, p0, p1, flags, s_words, s_ww, s_misc);
    const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
    u64 sum = 0;
    bool over = false;
    if (sizeof(U) == 8) {                             // saturating: values may be up to 2**64 - 1
#pragma unroll
        for (int q = 0; q < GPW; ++q) {
            over |= (u64)v[q] > LIMIT;
            const u64 x = sum + (u64)v[q];
            sum = x < sum ? ~0ull : x;
        }
#pragma unroll
        for (int o = 16; o; o >>= 1) {
            const u64 y = __shfl_xor_sync(FULL, sum, o), x = sum + y;
            sum = x < sum ? ~0ull : x;
        }
    } else {                                          // a warp's 512 values sum below 2**41
#pragma unroll
        for (int q = 0; q < GPW; ++q) {
            if (sizeof(U) == 4 && sizeof(O) == 4) over |= (u64)v[q] > LIMIT;
            sum += (u64)v[q];
        }
        sum = warp_sum(sum);
    }
    if (__any_sync(FULL, over) && lane == 0) atomicOr(err, 64);
    if (lane == 0) s_wsum[w] = sum;
    __syncthreads();
    u64 base = p0, all = p0;
#pragma unroll
    for (int k = 0; k < 8; ++k) {
        u64 x = base + (k < w ? s_wsum[k] : 0);
        base = x < base ? ~0ull : x;
        x = all + s_wsum[k];
        all = x < all ? ~0ull : x;
    }
    if (threadIdx.x == 0) {
        if (all != p1) atomicOr(err, 8);
        if (all > LIMIT) atomicOr(err, 64);
    }
    O* offs = reinterpret_cast<O*>(dst);
    O* offb = offs + (i64)blockIdx.x * (SB_GROUPS * 32);
    const int nloc = block_values(z.n, blockIdx.x), i0 = w * GPW * 32 + lane;
    u64 carry = base;
#pragma unroll
    for (int q = 0; q < GPW; q += 2) {
        u64 sa, sb, ta, tb;
        scan_pair<U>(v[q], v[q + 1], lane, sa, sb, ta, tb);
        if (i0 + 32 * q < nloc) offb[i0 + 32 * q] = (O)(carry + sa - (u64)v[q]);
        carry += ta;
        if (i0 + 32 * q + 32 < nloc) offb[i0 + 32 * q + 32] = (O)(carry + sb - (u64)v[q + 1]);
        carry += tb;
    }
    if (blockIdx.x == z.sblocks - 1 && threadIdx.x == 0) offs[z.n] = (O)p1;
}
