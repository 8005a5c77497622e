// Split-balanced FSST decompression straight into the Arrow data buffer, and the Arrow offsets.
//
// The column's codes are cut into splits (CompressedStringArray's split points): split k decodes
// codes[split_codes[k] : split_codes[k+1]] with table split_table[k] into exactly the output bytes
// out[split_out[k] : split_out[k+1]].  Codes of consecutive strings decode to consecutive output
// bytes, so a split decodes without knowing where its strings start, and every warp gets about the
// same *uncompressed* work whatever the string lengths.
//
// fsst_decode: one warp per split (or wps warps, each a run of its windows: launches of few
// splits), all 32 lanes busy on every code (the walk is described above
// warp_decode_split).  offsets_one_pass: the Arrow offsets from the lengths.
//
// Bad input: nothing is read or written out of bounds whatever the split points, codes or tables
// say.  Split bounds and table ids are checked against the buffer sizes before decoding; the code
// buffer is padded by the host (a multiple of 16 bytes plus FSST_CODES_PAD) so that the lanes'
// aligned loads stay inside it; an unknown code, an escape whose literal lies past the split, or
// output that overflows or underflows the split's range sets a bit of *err and the warp stops
// writing.  The host turns a non-zero *err into CorruptDataError.

typedef unsigned long long u64;
typedef long long i64;
typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned char u8;

#include "sync.cuh"
#include "offsets_scan.cuh"  // offsets_one_pass: the Arrow offsets

#define FSST_ERR_SPLIT 1      // split bounds outside the buffers or reversed
#define FSST_ERR_CODE 2       // a code the split's table does not define
#define FSST_ERR_ESCAPE 4     // an escape whose literal byte lies past the split's last code
#define FSST_ERR_OVERFLOW 8   // the codes decode to more bytes than the split's output range
#define FSST_ERR_UNDERFLOW 16 // ... or to fewer
#define FSST_ERR_TABLE 32     // split_table[k] >= number of tables
#define FSST_ERR_CROSS 128    // a string's end falls inside a symbol (fsst_check_ends)
#define FSST_ERR_UTF8 256     // a text column's strings are not valid UTF-8 (fsst_check_utf8)
#define FSST_ERR_CODESTART 512  // a string's codes do not start where its stored offset says

// PTX shifts clamp the shift amount (>= 64 gives 0), unlike C++ where it is undefined.
__device__ __forceinline__ u64 shl64(u64 x, u32 s) {
    u64 r;
    asm("shl.b64 %0, %1, %2;" : "=l"(r) : "l"(x), "r"(s));
    return r;
}
__device__ __forceinline__ u64 shr64(u64 x, u32 s) {
    u64 r;
    asm("shr.b64 %0, %1, %2;" : "=l"(r) : "l"(x), "r"(s));
    return r;
}

// String ends.  The decode needs no string boundaries, but a column is valid only where every
// string's codes decode on their own: no symbol may run across a string's end (the CPU decoder's
// check, issue #20).  The checked decode (fsst_decode_checked) also sets, in a bitmap of the
// output (aligned coordinates, zeroed first), the bit of every byte where a symbol starts; then
// fsst_check_ends tests each string's end against it: an end inside the output must be a symbol
// start.  Columns the encoder made, or checked once, take the unchecked kernels.
// (Code starts, the same check for stored code offsets: string_checks.cuh.)

// ---------------------------------------------------------------------------------------------
// One warp per split, all 32 lanes busy on every code.
//
// The warp walks its split's codes in windows of 32 * K bytes; lane l takes the K bytes at
// window + l * K (one aligned K-byte load; the window starts at cb rounded down to K).  Bytes
// outside [cb, ce) are set to 0xFF and masked out (they decode to nothing).
//   * Code / literal: a split starts at a code, so a run of 0xFF bytes starts at a code and
//     alternates escape, literal 0xFF, escape, ...: a byte is a literal iff the run of 0xFF bytes
//     just before it (within the split) has odd length.  Each lane finds its trailing 0xFF run's
//     parity and whether all its bytes are 0xFF (then, K being even, it passes the parity on
//     unchanged); two ballots give every lane the parity entering its bytes; the last lane's
//     parity enters the next window.
//   * Output offsets: per byte, the output length is the symbol's length (0 for an escape, 1 for
//     a literal); lane sums -> warp exclusive scan -> each lane's output position.
//   * Output: each lane builds its bytes in a 64-bit accumulator at a global-aligned word position
//     and writes every completed word into the warp's shared-memory ring with a plain store (the
//     word's lower bytes of other lanes are written as zeros); then each lane ORs its last,
//     unfinished word into the ring (atomicOr: several lanes can share a word), and lane 0 ORs
//     back the bytes carried over from the previous window.  The ring's complete 16-byte chunks
//     (global-aligned) go out with coalesced 16-byte stores; the split's unaligned head and tail
//     chunks byte by byte, so two warps never write the same byte.
// Errors (same bits as the thread-per-split kernel): an undefined code stops the split; output
// past the split's range is found before the window writes anything; an escape as the split's
// last byte; too few bytes at the end.  The ring is indexed modulo its size and global writes are
// confined to [ob, oe), so nothing is read or written out of bounds whatever the input.

// Tables are indexed by idx = code | (literal << 8): entries 256..511 are the literal bytes
// (symbol = the byte, length 1), so a literal needs no special case.  Lengths are kept in bits
// (8 * length); FSST_LB_BAD marks a code its table does not define (code 255 alone: 0).
#define FSST_LB_BAD 0x80
#define RING_SLACK 16  // ring words past the end: a lane's stores of one window (at most K)

struct SmemTable {
    const u64 *sym;  // 512 entries
    const u8 *lb;    // 512 entries, 8 * length or FSST_LB_BAD
    __device__ __forceinline__ u64 sym_of(u32 idx) const { return sym[idx]; }
    __device__ __forceinline__ u32 lb_chk(u32 idx) const { return lb[idx]; }
};

struct GlobalTable {  // the split's table in global memory (tab_sym / tab_len rows)
    const u64 *sym;
    const u8 *len;
    __device__ __forceinline__ u64 sym_of(u32 idx) const {
        return idx >= 256 ? (u64)(idx - 256) : __ldg(sym + idx);
    }
    __device__ __forceinline__ u32 lb_chk(u32 idx) const {
        if (idx >= 256) return 8u;
        const u32 l = __ldg(len + idx);
        return (l == 0 && idx != 255) ? FSST_LB_BAD : 8u * l;
    }
};

// a lane's K = 8 code bytes as two words (one aligned 8-byte load)
template <int K>
__device__ __forceinline__ void load_lane_bytes(const u8 *p, u32 (&w)[K / 4]) {
    static_assert(K == 8, "lanes load 8 code bytes");
    const uint2 v = *reinterpret_cast<const uint2 *>(p);
    w[0] = v.x;
    w[1] = v.y;
}

// 4 bits -> 4 bytes of 0x00 / 0xFF (bit i -> byte i)
__device__ __forceinline__ u32 expand_nibble(u32 m) { return ((m * 0x00204081u) & 0x01010101u) * 0xFFu; }
// the bytes of x equal to 0xFF -> 4 bits (byte i -> bit i)
__device__ __forceinline__ u32 ff_nibble(u32 x) {
    u32 b = x & (x >> 4);
    b &= b >> 2;
    b &= b >> 1;
    return ((b & 0x01010101u) * 0x10204080u) >> 28;
}

// One window's first pass, shared by the decode and the prefix walk: lane l's K code bytes (bytes
// outside [cb, ce) read as 0xFF and masked out), the parity of the 0xFF run entering them (par:
// the run entering the window, updated to the run leaving it), each byte's table index and length
// in bits (iw: two 16-bit entries a word) and their sum; bad has FSST_LB_BAD where a code is
// undefined; esc_end is set where the split's last byte is an escape.
template <int K, class Table>
__device__ __forceinline__ u32 window_pass1(const u8 *__restrict__ codes, i64 cb, i64 ce, i64 base,
                                            const Table tab, u32 &par, u32 (&iw)[K / 2], u32 &bad,
                                            u32 &esc_end) {
    constexpr u32 FULL = 0xffffffffu;
    constexpr int WBYTES = 32 * K;
    constexpr u32 KMASK = (1u << K) - 1;
    const u32 lane = threadIdx.x & 31;
    const i64 chunk = base + (i64)lane * K;
    u32 w[K / 4];
    if (chunk < ce) {
        load_lane_bytes<K>(codes + chunk, w);
    } else {
#pragma unroll
        for (int i = 0; i < K / 4; ++i) w[i] = 0;
    }
    // a window wholly inside the split, its last byte included, needs no masking and no check
    // of the split's last byte (a uniform branch)
    const bool inside = base >= cb && base + WBYTES < ce;
    u32 ffm = 0;
    if (inside) {
#pragma unroll
        for (int i = 0; i < K / 4; ++i) ffm |= ff_nibble(w[i]) << (4 * i);
    } else {
        const i64 lo64 = cb - chunk, hi64 = ce - chunk;
        const u32 lo = lo64 <= 0 ? 0u : (lo64 >= K ? (u32)K : (u32)lo64);
        const u32 hi = hi64 <= 0 ? 0u : (hi64 >= K ? (u32)K : (u32)hi64);
        const u32 vm = hi > lo ? (((1u << hi) - 1) & ~((1u << lo) - 1)) : 0u;
#pragma unroll
        for (int i = 0; i < K / 4; ++i) {
            w[i] |= ~expand_nibble((vm >> (4 * i)) & 15u);  // bytes outside the split -> 0xFF
            ffm |= ff_nibble(w[i]) << (4 * i);
        }
        ffm &= vm;  // ... but they do not extend 0xFF runs
    }
    // ---- parity of the 0xFF run entering this lane's bytes
    const bool allff = ffm == KMASK;
    const u32 run = __clz(~(ffm << (32 - K)));
    const u32 notall = __ballot_sync(FULL, !allff);
    const u32 podd = __ballot_sync(FULL, run & 1u);
    const u32 before = notall & ((1u << lane) - 1u);
    const u32 pin = before ? (podd >> (31 - __clz(before))) & 1u : par;
    par = notall ? (podd >> (31 - __clz(notall))) & 1u : par;
    // ---- pass 1: table index (code | literal << 8), output bits, undefined codes
    u32 sum = 0;
    bad = 0;
    u32 p = pin << 8;  // bit 8: the next byte is a literal
#pragma unroll
    for (int j = 0; j < K; ++j) {
        const u32 c = (w[j >> 2] >> (8 * (j & 3))) & 0xffu;
        const u32 idx = c | p;
        const u32 ffj = (j <= 8 ? ffm << (8 - j) : ffm >> (j - 8)) & 0x100u;
        p = ffj & ~p;  // a 0xFF byte that is not a literal is an escape
        const u32 lb = tab.lb_chk(idx);
        // the length goes with the index (bits 9..15; a bad code stops before pass 2)
        const u32 ent = idx | (lb << 9);
        if (j & 1) iw[j >> 1] |= ent << 16; else iw[j >> 1] = ent;
        bad |= lb;
        sum += lb;
    }
    if (!inside) {
        const i64 e = ce - 1 - chunk;  // the split's last byte must not be an escape
        if (e >= 0 && e < K) {
            u32 q = pin;
#pragma unroll 1
            for (int j = 0; j <= (int)e; ++j) q = ((ffm >> j) & 1u) & (q ^ 1u);
            esc_end |= q;
        }
    }
    return sum;
}

// Bytes [lo, hi) of the 16 at p (16-byte aligned): a word store where the range covers the word,
// byte stores at its edges. (A byte loop over the 16 ran with one lane of the warp active and
// was 12.5% of the 1 GiB decode's instructions: ncu, BENCHMARKS.md section 30.)
__device__ __forceinline__ void store_own_bytes(u8 *p, const uint4 v, u32 lo, u32 hi) {
    const u32 w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (u32 k = 0; k < 4; ++k) {
        const u32 b0 = 4 * k;
        if (lo <= b0 && b0 + 4 <= hi) {
            *reinterpret_cast<u32 *>(p + b0) = w[k];
        } else {
#pragma unroll
            for (u32 i = 0; i < 4; ++i)
                if (lo <= b0 + i && b0 + i < hi) p[b0 + i] = (u8)(w[k] >> (8 * i));
        }
    }
}

// Decode the windows of split [cb, ce) (output [aob, aoe)) from code position ubeg to uend (both
// window boundaries, uend >= ce for the split's last part): several warps may share a split, each
// a run of its windows.  A warp that starts past the split's first window first walks the windows
// before ubeg with the first pass alone, for its output position and the 0xFF parity entering
// ubeg; it writes only the bytes its windows produce, and only the part that ends the split
// checks the split's end.
template <int K, int RING, bool CHECK, class Table>
__device__ __forceinline__ void warp_decode_split(const u8 *__restrict__ codes, i64 cb, i64 ce,
                                                  i64 ubeg, i64 uend, const Table tab,
                                                  u8 *__restrict__ outa, i64 aob, i64 aoe,
                                                  u64 *ring, int *__restrict__ err,
                                                  u64 *__restrict__ starts,
                                                  const u8 *__restrict__ cstarts,
                                                  u64 *__restrict__ mapped) {
    constexpr u32 FULL = 0xffffffffu;
    constexpr int WBYTES = 32 * K;
    constexpr u32 RW = RING / 8;    // ring words
    constexpr u32 RC = RING / 16;   // ring 16-byte chunks
    const u32 lane = threadIdx.x & 31;
    u32 *ring32 = reinterpret_cast<u32 *>(ring);
    const uint4 *ring16 = reinterpret_cast<const uint4 *>(ring);

    i64 base = cb & ~(i64)(K - 1);
    u32 par = 0;               // parity of the 0xFF run entering the window
    u32 esc_end = 0;
    i64 A = aob;               // output position (aligned coordinates) of the window's first byte
    for (; base < ubeg; base += WBYTES) {  // the windows before this warp's: positions only
        u32 iw[K / 2], bad;
        const u32 sum = window_pass1<K>(codes, cb, ce, base, tab, par, iw, bad, esc_end);
        if (__any_sync(FULL, bad & FSST_LB_BAD)) {
            if (lane == 0) atomicOr(err, FSST_ERR_CODE);
            return;
        }
        A += __reduce_add_sync(FULL, sum >> 3);
    }
    if (A > aoe) {
        if (lane == 0) atomicOr(err, FSST_ERR_OVERFLOW);
        return;
    }
    const i64 first = A;       // this warp writes output bytes from here
    i64 F = A & ~(i64)15;      // everything before F is written out
    u64 carry = 0;             // bytes of ring word A >> 3 below A (zeros above)
    const i64 stop = uend < ce ? uend : ce;
    while (base < stop) {
        __syncwarp();  // the previous window's flush has read the ring
        u32 iw[K / 2], bad;
        u32 sum = window_pass1<K>(codes, cb, ce, base, tab, par, iw, bad, esc_end);
        if (__any_sync(FULL, bad & FSST_LB_BAD)) {
            if (lane == 0) atomicOr(err, FSST_ERR_CODE);
            return;
        }
        sum >>= 3;
        // ---- output positions: warp exclusive scan of the lane sums
        u32 incl = sum;
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            const u32 up = __shfl_up_sync(FULL, incl, d);
            if (lane >= (u32)d) incl += up;
        }
        const u32 T = __shfl_sync(FULL, incl, 31);
        const i64 wend = A + T;
        if (wend > aoe) {
            if (lane == 0) atomicOr(err, FSST_ERR_OVERFLOW);
            return;
        }
        if constexpr (CHECK) {  // the symbol starts of the lane's output bytes, into the bitmap
            // and, where the host marked code starts, the output starts of the marked codes
            const i64 chunk = base + (i64)lane * K;
            u32 cmark = 0;  // bit j: code chunk + j starts a string (K == 8: one byte)
            if (cstarts != nullptr && chunk < ce) {
                const i64 lo64 = cb - chunk, hi64 = ce - chunk;  // the split's bytes only
                const u32 lo = lo64 <= 0 ? 0u : (u32)lo64;      // (< K: chunk + K > cb)
                const u32 hi = hi64 >= K ? (u32)K : (u32)hi64;
                cmark = (u32)cstarts[chunk >> 3] & ((1u << hi) - 1) & ~((1u << lo) - 1);
            }
            u64 smask = 0, mmask = 0;
            u32 d = 0;
#pragma unroll
            for (int j = 0; j < K; ++j) {
                const u32 ent = (j & 1) ? iw[j >> 1] >> 16 : iw[j >> 1] & 0xffffu;
                const u32 lb = ent >> 9;
                smask |= shl64(lb != 0, d);  // an escape (no output) starts nothing
                // a code or an escape (not a literal: index < 256) starts a symbol in the codes;
                // its output starts at d (an escape's literal adds its byte there)
                mmask |= shl64(((cmark >> j) & 1u) & (u32)((ent & 0x1ffu) < 256u), d);
                d += lb >> 3;
            }
            const i64 p = A + (incl - sum);
            const u32 s = (u32)p & 63u;
            if (smask) {
                atomicOr(starts + (p >> 6), shl64(smask, s));
                const u64 hi = s ? shr64(smask, 64 - s) : 0ull;
                if (hi) atomicOr(starts + (p >> 6) + 1, hi);
            }
            if (mmask) {  // (one a string: rare)
                atomicOr(mapped + (p >> 6), shl64(mmask, s));
                const u64 hi = s ? shr64(mmask, 64 - s) : 0ull;
                if (hi) atomicOr(mapped + (p >> 6) + 1, hi);
            }
        }
        // ---- ring words the window only ORs into: its first (holds the carry) and its last
        // (ring positions from the low 32 bits of output positions: the ring's size divides
        // 2^32, and a window spans T < 2^32 bytes, so (A & 7) + T >= 8 is wend >> 3 != A >> 3)
        const u32 a32 = (u32)A;
        if (lane == 0) ring[(a32 >> 3) & (RW - 1)] = carry;
        if (lane == 1 && (a32 & 7u) + T >= 8u) ring[((u32)wend >> 3) & (RW - 1)] = 0;
        __syncwarp();
        // ---- pass 2: emit completed words (past the ring's end into its slack, moved back after)
        const u32 pos = a32 + (incl - sum);
        const u32 rs = (pos >> 3) & (RW - 1);
        u32 wi = rs;  // the ring word being filled (a 32-bit index: no 64-bit pointer steps)
        u32 sh = (pos & 7u) * 8u;
        u64 acc = 0;
#pragma unroll
        for (int j = 0; j < K; ++j) {
            const u32 ent = (j & 1) ? iw[j >> 1] >> 16 : iw[j >> 1] & 0xffffu;
            const u32 idx = ent & 0x1ffu;
            const u64 sym = tab.sym_of(idx);
            acc |= shl64(sym, sh);
            const u64 ov = shr64(sym, 64 - sh);  // sh == 0: nothing overflows
            sh += ent >> 9;
            const bool full = sh >= 64;
            if (full) ring[wi] = acc;
            wi += sh >> 6;
            acc = full ? ov : acc;
            sh &= 63u;
        }
        const u32 rend = wi;  // ring word of the lane's unfinished word
#pragma unroll 1
        for (u32 x = rs > RW ? rs : RW; x < rend; ++x) ring[x - RW] = ring[x];
        __syncwarp();
        // ---- unfinished words: OR them in (several lanes may share one)
        // fewer branches: OR whole words (ORing zeros changes nothing)
        if (sh) {
            const u32 r = 2 * (rend & (RW - 1));
            atomicOr(ring32 + r, (u32)acc);
            atomicOr(ring32 + r + 1, (u32)(acc >> 32));
        }
        if (lane == 0 && (a32 & 7u)) {
            const u32 r = 2 * ((a32 >> 3) & (RW - 1));
            atomicOr(ring32 + r, (u32)carry);
            atomicOr(ring32 + r + 1, (u32)(carry >> 32));
        }
        __syncwarp();
        carry = (wend & 7) ? ring[((u32)wend >> 3) & (RW - 1)] : 0ull;
        // ---- write out the complete chunks (all of them after the warp's last window), in
        // 32-bit offsets from F: n = L - F < RING + 16, and first - F < 16 where positive
        base += WBYTES;
        const i64 L = base >= stop ? wend : (wend & ~(i64)15);
        const u32 n = (u32)(L - F);
        const u32 fo = first > F ? (u32)(first - F) : 0u;
        u8 *const dst = outa + F;
        const u32 c0 = (u32)F >> 4;
        for (u32 g = 16 * lane; g < n; g += 512) {
            const uint4 v = ring16[(c0 + (g >> 4)) & (RC - 1)];
            if (g >= fo && g + 16 <= n) {
                *reinterpret_cast<uint4 *>(dst + g) = v;
            } else {  // a chunk shared with the split's or the warp's neighbour: own bytes only
                store_own_bytes(dst + g, v, fo > g ? fo - g : 0u, n - g >= 16 ? 16u : n - g);
            }
        }
        F = L > F ? (L & ~(i64)15) : F;
        A = wend;
    }
    if (uend < ce) return;  // the split's end is another warp's to check
    int e = 0;
    if (A != aoe) e |= FSST_ERR_UNDERFLOW;
    if (__any_sync(FULL, esc_end)) e |= FSST_ERR_ESCAPE;
    if (lane == 0 && e) atomicOr(err, e);
}

// The decode kernel: wps warps per split (1, 2, 4 or 8), FSST_WARPS warps per block; the block's
// first and last splits' tables in shared memory (a split with another table reads its table from global memory).
// FSST_K code bytes per lane; FSST_RING bytes of staging per warp (at least twice the most a window
// can emit, 32 * K * 8, so that a window never overwrites unwritten bytes); launch bounds: 5
// resident blocks per SM (40 warps, at most 48 registers).
#define FSST_K 8
#define FSST_WARPS 8
#define FSST_RING 4096

#include "split_pieces.cuh"  // split_pieces: the planned call's pieces of splits

// The decode's shared memory: the block's first and last splits' tables and each warp's ring.
struct DecodeSmem {
    u64 sym[2][512];
    u8 lb[2][512];
    __align__(16) u64 ring[FSST_WARPS][FSST_RING / 8 + RING_SLACK];
};

// Block `block` of the decode (wps warps per split, 1, 2, 4 or 8: a divisor of FSST_WARPS);
// with CHECK, the symbol starts into the bitmap `starts` as well.
template <bool CHECK>
__device__ __forceinline__ void decode_block(
    i64 block, const u8 *__restrict__ codes, i64 ncodes, const i64 *__restrict__ split_codes,
    const i64 *__restrict__ split_out, const u16 *__restrict__ split_table, i64 nsplits,
    const u64 *__restrict__ tab_sym, const u8 *__restrict__ tab_len, int ntables,
    u8 *__restrict__ out, i64 out_size, int *__restrict__ err, int wps,
    const u32 *__restrict__ order, DecodeSmem &sm, u64 *__restrict__ starts,
    const u8 *__restrict__ cstarts, u64 *__restrict__ mapped) {
    constexpr int WARPS = FSST_WARPS;
    constexpr int WBYTES = 32 * FSST_K;
    const int warp = threadIdx.x >> 5;
    // part j of the q-th split in launch order: split order[q] where an order is given (the
    // longest splits first: blocks start in index order, so the last wave holds short ones)
    const i64 g0 = block * WARPS;
    const i64 q = (g0 + warp) / wps;
    const int j = (int)((g0 + warp) % wps);
    const i64 q0 = g0 / wps;
    const i64 qlast = ((g0 + WARPS) / wps < nsplits ? (g0 + WARPS) / wps : nsplits) - 1;
    const i64 k0 = order ? (i64)order[q0] : q0, klast = order ? (i64)order[qlast] : qlast;
    const int t0 = k0 < nsplits ? split_table[k0] : 0;
    const int t1 = klast < nsplits ? split_table[klast] : 0;
    {
        const int c0 = t0 < ntables ? t0 : 0, c1 = t1 < ntables ? t1 : 0;
        for (int i = threadIdx.x; i < 256; i += blockDim.x) {
            const u32 l0 = tab_len[(i64)c0 * 256 + i], l1 = tab_len[(i64)c1 * 256 + i];
            sm.sym[0][i] = tab_sym[(i64)c0 * 256 + i];
            sm.sym[1][i] = tab_sym[(i64)c1 * 256 + i];
            sm.lb[0][i] = (u8)((l0 == 0 && i != 255) ? FSST_LB_BAD : 8 * l0);
            sm.lb[1][i] = (u8)((l1 == 0 && i != 255) ? FSST_LB_BAD : 8 * l1);
            sm.sym[0][256 + i] = sm.sym[1][256 + i] = (u64)i;  // literals
            sm.lb[0][256 + i] = sm.lb[1][256 + i] = 8;
        }
    }
    __syncthreads();
    if (q >= nsplits) return;
    const i64 k = order ? (i64)order[q] : q;
    if (k >= nsplits) {  // an order that names no split
        if ((threadIdx.x & 31) == 0 && j == 0) atomicOr(err, FSST_ERR_SPLIT);
        return;
    }
    const i64 cb = split_codes[k], ce = split_codes[k + 1];
    const i64 ob = split_out[k], oe = split_out[k + 1];
    const int t = split_table[k];
    if (!(0 <= cb && cb <= ce && ce <= ncodes && 0 <= ob && ob <= oe && oe <= out_size)) {
        if ((threadIdx.x & 31) == 0 && j == 0) atomicOr(err, FSST_ERR_SPLIT);
        return;
    }
    if (t >= ntables) {
        if ((threadIdx.x & 31) == 0 && j == 0) atomicOr(err, FSST_ERR_TABLE);
        return;
    }
    // this warp's windows: its share of the split's, the last part to the end
    const i64 base0 = cb & ~(i64)(FSST_K - 1);
    const i64 nwin = (ce - base0 + WBYTES - 1) / WBYTES;
    const i64 wb = j * nwin / wps, we = (j + 1) * nwin / wps;
    if (j < wps - 1 && wb == we) return;  // fewer windows than warps: nothing of its own
    const i64 ubeg = base0 + wb * WBYTES;
    const i64 uend = j == wps - 1 ? ce : base0 + we * WBYTES;
    // global-aligned output coordinates: outa is 16-byte aligned, outa + aob == out + ob
    const i64 shift = (i64)((unsigned long long)out & 15);
    u8 *outa = out - shift;
    u64 *ring = sm.ring[warp];
    if (t == t0 || t == t1) {
        const int slot = t == t0 ? 0 : 1;
        warp_decode_split<FSST_K, FSST_RING, CHECK>(codes, cb, ce, ubeg, uend,
                                                    SmemTable{sm.sym[slot], sm.lb[slot]}, outa,
                                                    ob + shift, oe + shift, ring, err, starts,
                                                    cstarts, mapped);
    } else {
        warp_decode_split<FSST_K, FSST_RING, CHECK>(
            codes, cb, ce, ubeg, uend,
            GlobalTable{tab_sym + (i64)t * 256, tab_len + (i64)t * 256}, outa, ob + shift,
            oe + shift, ring, err, starts, cstarts, mapped);
    }
}

// Several columns decode in one launch when their codes, outputs, tables and splits are
// concatenated (split positions and table ids shifted): the kernel does not know about columns.
extern "C" __global__ void __launch_bounds__(32 * FSST_WARPS, 5) fsst_decode(
    const u8 *__restrict__ codes, i64 ncodes, const i64 *__restrict__ split_codes,
    const i64 *__restrict__ split_out, const u16 *__restrict__ split_table, i64 nsplits,
    const u64 *__restrict__ tab_sym, const u8 *__restrict__ tab_len, int ntables,
    u8 *__restrict__ out, i64 out_size, int *__restrict__ err, int wps) {
    __shared__ DecodeSmem sm;
    decode_block<false>(blockIdx.x, codes, ncodes, split_codes, split_out, split_table, nsplits,
                        tab_sym, tab_len, ntables, out, out_size, err, wps, nullptr, sm, nullptr,
                        nullptr, nullptr);
}

// fsst_decode, also setting the bit of every symbol start in `starts`: a bitmap of the output
// in aligned coordinates (bit (out & 15) + i is output byte i), (out_size + 16) / 64 + 2 words,
// zeroed before.  With check_codes, also the output start of every code marked in `cstarts`
// (bit p: code p; (ncodes + 7) / 8 bytes at least) into `mapped` (like `starts`, zeroed before);
// without, those two are not read (any pointers).
extern "C" __global__ void __launch_bounds__(32 * FSST_WARPS, 5) fsst_decode_checked(
    const u8 *__restrict__ codes, i64 ncodes, const i64 *__restrict__ split_codes,
    const i64 *__restrict__ split_out, const u16 *__restrict__ split_table, i64 nsplits,
    const u64 *__restrict__ tab_sym, const u8 *__restrict__ tab_len, int ntables,
    u8 *__restrict__ out, i64 out_size, int *__restrict__ err, int wps,
    u64 *__restrict__ starts, const u8 *__restrict__ cstarts, u64 *__restrict__ mapped,
    int check_codes) {
    __shared__ DecodeSmem sm;
    decode_block<true>(blockIdx.x, codes, ncodes, split_codes, split_out, split_table, nsplits,
                       tab_sym, tab_len, ntables, out, out_size, err, wps, nullptr, sm, starts,
                       check_codes ? cstarts : nullptr, check_codes ? mapped : nullptr);
}

#include "string_checks.cuh"  // fsst_check_ends: string ends and code starts
#include "utf8_check.cuh"  // fsst_check_utf8: the text columns' bytes as UTF-8 streams

// ---------------------------------------------------------------------------------------------
// The planned call's one kernel: the decode's blocks first, then the scan's tiles, and the last
// block to finish copies the flags into host memory.
//
// Blocks [0, decode_blocks) are fsst_decode's, the next ntiles offsets_one_pass's (the same
// device functions, the same bytes).  Blocks start roughly in index order, so the scan's tiles
// fill the decode's last wave instead of taking slots from its first (two kernels side by side
// in a graph cost 8-16 us at 16-64 MiB over the decode alone, H200: BENCHMARKS.md section 30);
// the tiles' tickets keep the scan correct in any order.  Every block then counts itself done
// (status[ntiles + 1], zeroed with the status words); the last copies the nflags flags at err
// into host_flags (a pinned slot mapped into the device's address space, so the host reads them
// after one stream sync with no copy call), where host_flags is not null.
template <typename L>
__global__ void __launch_bounds__(32 * FSST_WARPS, 5) decode_planned(
    const u8 *__restrict__ codes, i64 ncodes, const i64 *__restrict__ split_codes,
    const i64 *__restrict__ split_out, const u16 *__restrict__ split_table, i64 nsplits,
    const u64 *__restrict__ tab_sym, const u8 *__restrict__ tab_len, int ntables,
    u8 *__restrict__ out, i64 out_size, int wps, const u32 *__restrict__ order,
    i64 decode_blocks, const L *__restrict__ len, i64 n, u64 *__restrict__ status, i64 ntiles,
    const i64 *__restrict__ col_first, const i64 *__restrict__ col_base,
    const i64 *__restrict__ col_obyte, const u8 *__restrict__ col_wide, int ncols,
    u8 *__restrict__ offsets, u64 timeout_ns, int *__restrict__ err, int nflags,
    int *__restrict__ host_flags) {
    static_assert(32 * FSST_WARPS == 256, "the scan's tiles take blocks of 256 threads");
    __shared__ union {
        DecodeSmem d;
        ScanSmem s;
    } sm;
    __shared__ int last;
    if ((i64)blockIdx.x < decode_blocks) {
        decode_block<false>(blockIdx.x, codes, ncodes, split_codes, split_out, split_table,
                            nsplits, tab_sym, tab_len, ntables, out, out_size, err, wps, order,
                            sm.d, nullptr, nullptr, nullptr);
    } else {
        scan_tile(len, n, status, ntiles, col_first, col_base, col_obyte, col_wide, ncols,
                  offsets, err, timeout_ns, sm.s);
    }
    // the last block done: every flag write of every block is visible to it (the barrier, then
    // one thread's fence before the block's count: the fence is cumulative, as in cooperative
    // groups' grid sync; a fence in every thread waited for each thread's output stores)
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        last = atomicAdd(reinterpret_cast<unsigned *>(status + ntiles + 1), 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (last && host_flags != nullptr) {
        __threadfence();
        for (int i = threadIdx.x; i < nflags; i += blockDim.x)
            host_flags[i] = *reinterpret_cast<volatile int *>(err + i);
    }
}
