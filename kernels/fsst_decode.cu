// Split-balanced FSST decompression straight into the Arrow data buffer.
//
// The column's codes are cut into splits (CompressedStringArray's split points): split k decodes
// codes[split_codes[k] : split_codes[k+1]] with table split_table[k] into exactly the output bytes
// out[split_out[k] : split_out[k+1]].  Codes of consecutive strings decode to consecutive output
// bytes, so one thread decodes one split without knowing where its strings start, and every thread
// gets about the same *uncompressed* work whatever the string lengths.
//
// Per thread:
//   * input: aligned 16-byte loads of the codes, one chunk prefetched ahead, fed 8 bytes at a time
//     into a 128-bit shift register (lo:hi) whose low byte is the next code.  A refill keeps at
//     least 9 bytes in hand, enough for 4 codes (escape + literal included), so the inner loop is
//     unrolled by 4 with one refill check per group.
//   * table: the block's (at most two) tables in shared memory; splits whose table is neither fall
//     back to the table in global memory (correct, slower; happens only at table boundaries).
//   * output: a 64-bit accumulator at an 8-byte aligned position; each full word is written with an
//     aligned 8-byte store, or paired into one aligned 16-byte store (STORE16).  The split's
//     unaligned head and tail bytes are written one by one, so two threads never write the same
//     byte and every store is aligned.
//
// Bad input: nothing is read or written out of bounds whatever the split points, codes or tables
// say.  Split bounds and table ids are checked against the buffer sizes before decoding; the code
// buffer is padded by the host (FSST_CODES_PAD bytes past the last code, rounded to 16) so that the
// prefetching loads stay inside it; an unknown code (length 0 in the table), an escape whose literal
// lies past the split, or output that overflows or underflows the split's range sets a bit of *err
// and the thread stops writing.  The host turns a non-zero *err into CorruptDataError.

typedef unsigned long long u64;
typedef long long i64;
typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned char u8;

#define FSST_ERR_SPLIT 1      // split bounds outside the buffers or reversed
#define FSST_ERR_CODE 2       // a code the split's table does not define
#define FSST_ERR_ESCAPE 4     // an escape whose literal byte lies past the split's last code
#define FSST_ERR_OVERFLOW 8   // the codes decode to more bytes than the split's output range
#define FSST_ERR_UNDERFLOW 16 // ... or to fewer
#define FSST_ERR_TABLE 32     // split_table[k] >= number of tables

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

__device__ __forceinline__ u64 lo_word(uint4 v) { return (u64)v.x | ((u64)v.y << 32); }
__device__ __forceinline__ u64 hi_word(uint4 v) { return (u64)v.z | ((u64)v.w << 32); }

// Byte stores of word's bytes [from, to) at out + pos (pos 8-aligned): heads and tails only.
__device__ __forceinline__ void store_bytes(u8 *out, i64 pos, u64 word, u32 from, u32 to) {
#pragma unroll 1
    for (u32 j = from; j < to; ++j) out[pos + j] = (u8)(word >> (8 * j));
}

template <int STORE16>
__device__ __forceinline__ void decode_split(const u8 *__restrict__ codes, i64 cb, i64 ce,
                                             const u64 *tsym, const u8 *tlen,
                                             u8 *__restrict__ out, i64 ob, i64 oe,
                                             int *__restrict__ err) {
    // ---- input: 128-bit shift register (lo:hi), `avail` valid bytes, the next code in lo's byte 0
    const uint4 *chunk = reinterpret_cast<const uint4 *>(codes + (cb & ~(i64)15));
    const uint4 first = chunk[0];
    uint4 stg = chunk[1];  // words fed next
    uint4 nxt = chunk[2];  // prefetched one chunk ahead
    chunk += 3;
    u32 sidx = 0;  // which 8-byte word of stg feeds the next refill
    const u32 skip = (u32)(cb & 15);
    u64 lo, hi;
    {
        const u64 w0 = lo_word(first), w1 = hi_word(first);
        const u32 s = 8 * skip;
        if (s < 64) {
            lo = shr64(w0, s) | shl64(w1, 64 - s);
            hi = shr64(w1, s);
        } else {
            lo = shr64(w1, s - 64);
            hi = 0;
        }
    }
    u32 avail = 16 - skip;  // 1..16

    // ---- output: accumulator of `afill` bytes at the 8-aligned position opos
    i64 opos = ob & ~(i64)7;
    u32 afill = (u32)(ob & 7);  // the head's bytes before ob are zeros that are never written
    u64 acc = 0;
    u64 low = 0;        // STORE16: the low half of a 16-byte chunk waiting for its high half
    bool has_low = false;
    u32 bad = 0;
    u64 sink = 0;
    i64 cpos = cb;

    while (cpos < ce) {
        if (avail <= 8) {  // refill 8 bytes: afterwards avail >= 9, enough for 4 codes
            const u64 w = sidx ? hi_word(stg) : lo_word(stg);
            const u32 s = 8 * avail;
            lo |= shl64(w, s);      // avail == 8: nothing goes to lo
            hi = shr64(w, 64 - s);  // avail == 0 cannot happen (avail >= 1 here)
            avail += 8;
            if (++sidx == 2) {
                stg = nxt;
                nxt = *chunk++;
                sidx = 0;
            }
        }
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            if (cpos < ce) {
                const u32 c = (u32)lo & 0xff;
                const bool esc = c == 255;
                u64 sym = tsym[c];
                u32 len = tlen[c];
                const u32 lit = (u32)(lo >> 8) & 0xff;
                sym = esc ? (u64)lit : sym;
                len = esc ? 1u : len;
                bad |= (len == 0);
                const u32 sh = esc ? 16u : 8u;
                lo = shr64(lo, sh) | shl64(hi, 64 - sh);
                hi = shr64(hi, sh);
                avail -= sh >> 3;
                cpos += sh >> 3;
                const u32 s = 8 * afill;
                acc |= shl64(sym, s);
                const u64 ov = shr64(sym, 64 - s);  // s == 0: nothing overflows
                afill += len;
                if (afill >= 8) {
                    if (opos + 8 > oe) {
                        atomicOr(err, FSST_ERR_OVERFLOW);
                        return;
                    }
                    if (STORE16 == 2) {
                        sink ^= acc;  // timing experiment: decode without the stores
                    } else if (opos < ob) {
                        store_bytes(out, opos, acc, (u32)(ob - opos), 8);
                    } else if (STORE16) {
                        if (opos & 8) {
                            if (has_low) {
                                uint4 v;
                                v.x = (u32)low;
                                v.y = (u32)(low >> 32);
                                v.z = (u32)acc;
                                v.w = (u32)(acc >> 32);
                                *reinterpret_cast<uint4 *>(out + opos - 8) = v;
                            } else {
                                *reinterpret_cast<u64 *>(out + opos) = acc;
                            }
                            has_low = false;
                        } else {
                            low = acc;
                            has_low = true;
                        }
                    } else {
                        *reinterpret_cast<u64 *>(out + opos) = acc;
                    }
                    acc = ov;
                    afill -= 8;
                    opos += 8;
                }
            }
        }
    }
    if (STORE16 == 2) {
        if (sink == 0x0123456789abcdefULL) out[ob] = 0;  // keeps the decode from being optimised out
        return;
    }
    if (has_low) *reinterpret_cast<u64 *>(out + opos - 8) = low;
    int e = 0;
    if (bad) e |= FSST_ERR_CODE;
    if (cpos != ce) e |= FSST_ERR_ESCAPE;
    const i64 end = opos + afill;
    if (end > oe) e |= FSST_ERR_OVERFLOW;
    if (end < oe) e |= FSST_ERR_UNDERFLOW;
    if (end <= oe) {
        const u32 from = opos < ob ? (u32)(ob - opos) : 0u;
        store_bytes(out, opos, acc, from, afill);
    }
    if (e) atomicOr(err, e);
}

// One thread per split.  tab_sym / tab_len: (ntables, 256) symbols (little-endian, zero padded)
// and lengths, length 0 for every code a table does not define (code 255 included).
template <int STORE16, int SMEM_TABLE>
__device__ __forceinline__ void decode_splits_impl(
    const u8 *__restrict__ codes, i64 ncodes, const i64 *__restrict__ split_codes,
    const i64 *__restrict__ split_out, const u16 *__restrict__ split_table, i64 nsplits,
    const u64 *__restrict__ tab_sym, const u8 *__restrict__ tab_len, int ntables,
    u8 *__restrict__ out, i64 out_size, int *__restrict__ err) {
    __shared__ u64 s_sym[2][256];
    __shared__ u8 s_len[2][256];
    const i64 k0 = (i64)blockIdx.x * blockDim.x;
    const i64 k = k0 + threadIdx.x;
    int t0 = 0, t1 = 0;
    if (SMEM_TABLE) {
        const i64 klast = (k0 + blockDim.x < nsplits ? k0 + blockDim.x : nsplits) - 1;
        t0 = split_table[k0];
        t1 = split_table[klast];
        const int c0 = t0 < ntables ? t0 : 0, c1 = t1 < ntables ? t1 : 0;
        for (int i = threadIdx.x; i < 256; i += blockDim.x) {
            s_sym[0][i] = tab_sym[(i64)c0 * 256 + i];
            s_len[0][i] = tab_len[(i64)c0 * 256 + i];
            s_sym[1][i] = tab_sym[(i64)c1 * 256 + i];
            s_len[1][i] = tab_len[(i64)c1 * 256 + i];
        }
        __syncthreads();
    }
    if (k >= nsplits) return;
    const i64 cb = split_codes[k], ce = split_codes[k + 1];
    const i64 ob = split_out[k], oe = split_out[k + 1];
    const int t = split_table[k];
    if (!(0 <= cb && cb <= ce && ce <= ncodes && 0 <= ob && ob <= oe && oe <= out_size)) {
        atomicOr(err, FSST_ERR_SPLIT);
        return;
    }
    if (t >= ntables) {
        atomicOr(err, FSST_ERR_TABLE);
        return;
    }
    if (SMEM_TABLE && (t == t0 || t == t1)) {
        const int slot = t == t0 ? 0 : 1;
        decode_split<STORE16>(codes, cb, ce, s_sym[slot], s_len[slot], out, ob, oe, err);
    } else {
        decode_split<STORE16>(codes, cb, ce, tab_sym + (i64)t * 256, tab_len + (i64)t * 256, out,
                              ob, oe, err);
    }
}

#define FSST_DECODE_KERNEL(NAME, STORE16, SMEM_TABLE, THREADS, MINBLOCKS)                          \
    extern "C" __global__ void __launch_bounds__(THREADS, MINBLOCKS) NAME(                        \
        const u8 *__restrict__ codes, i64 ncodes, const i64 *__restrict__ split_codes,            \
        const i64 *__restrict__ split_out, const u16 *__restrict__ split_table, i64 nsplits,      \
        const u64 *__restrict__ tab_sym, const u8 *__restrict__ tab_len, int ntables,             \
        u8 *__restrict__ out, i64 out_size, int *__restrict__ err) {                               \
        decode_splits_impl<STORE16, SMEM_TABLE>(codes, ncodes, split_codes, split_out,             \
                                                split_table, nsplits, tab_sym, tab_len, ntables,   \
                                                out, out_size, err);                               \
    }

// The default (fastest measured) and the variants the benchmark compares.
FSST_DECODE_KERNEL(fsst_decode_s16_smem_256, 1, 1, 256, 1)
FSST_DECODE_KERNEL(fsst_decode_s16_smem_128, 1, 1, 128, 1)
FSST_DECODE_KERNEL(fsst_decode_s8_smem_256, 0, 1, 256, 1)
FSST_DECODE_KERNEL(fsst_decode_s16_gmem_256, 1, 0, 256, 1)
// more resident warps (register cap 40: 6 blocks of 256 per SM)
FSST_DECODE_KERNEL(fsst_decode_s16_smem_256_occ6, 1, 1, 256, 6)
// timing only (writes nothing): what the decode costs without its output stores
FSST_DECODE_KERNEL(fsst_decode_nostore_smem_256, 2, 1, 256, 1)

// ---------------------------------------------------------------------------------------------
// Arrow offsets from the uncompressed lengths: offsets[0] = 0, offsets[i + 1] = sum(len[0..i]).
// Two passes over tiles of 4096 lengths (256 threads x 16): tile sums, then (after the host
// enqueues an exclusive scan of the few tile sums) a tile scan that loads and stores through
// shared memory so both global accesses are coalesced.  Lengths come in their narrowest unsigned
// type (L); offsets are int32 or int64 (O).
#define FSST_SCAN_TILE 4096

template <typename O>
__device__ __forceinline__ O warp_inclusive_scan(O v) {
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        const O up = __shfl_up_sync(0xffffffffu, v, d);
        if (lane >= d) v += up;
    }
    return v;
}

template <typename L, typename O>
__global__ void __launch_bounds__(256) offsets_tile_sums(const L *__restrict__ len, i64 n,
                                                         O *__restrict__ sums) {
    const i64 base = (i64)blockIdx.x * FSST_SCAN_TILE;
    O s = 0;
    for (int j = threadIdx.x; j < FSST_SCAN_TILE; j += 256) {
        const i64 i = base + j;
        if (i < n) s += (O)len[i];
    }
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) s += __shfl_down_sync(0xffffffffu, s, d);
    __shared__ O ws[8];
    if ((threadIdx.x & 31) == 0) ws[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        O t = 0;
        for (int w = 0; w < 8; ++w) t += ws[w];
        sums[blockIdx.x] = t;
    }
}

// tile_base[b]: exclusive prefix of the tile sums (sum of every length before tile b).
template <typename L, typename O>
__global__ void __launch_bounds__(256) offsets_tile_scan(const L *__restrict__ len, i64 n,
                                                         const O *__restrict__ tile_base,
                                                         O *__restrict__ offsets) {
    // padded by one entry every 16, so that thread t's 16 entries (stride 17) hit distinct banks
    __shared__ O tile[FSST_SCAN_TILE + FSST_SCAN_TILE / 16];
    __shared__ O ws[8];
    const i64 base = (i64)blockIdx.x * FSST_SCAN_TILE;
    for (int j = threadIdx.x; j < FSST_SCAN_TILE; j += 256) {
        const i64 i = base + j;
        tile[j + (j >> 4)] = i < n ? (O)len[i] : (O)0;
    }
    __syncthreads();
    O v[16];
    O s = 0;
#pragma unroll
    for (int k = 0; k < 16; ++k) {
        v[k] = tile[threadIdx.x * 17 + k];
        s += v[k];
    }
    const O incl = warp_inclusive_scan(s);
    if ((threadIdx.x & 31) == 31) ws[threadIdx.x >> 5] = incl;
    __syncthreads();
    O before = tile_base[blockIdx.x];
    for (int w = 0; w < (int)(threadIdx.x >> 5); ++w) before += ws[w];
    O run = before + incl - s;
#pragma unroll
    for (int k = 0; k < 16; ++k) {
        run += v[k];
        tile[threadIdx.x * 17 + k] = run;
    }
    __syncthreads();
    for (int j = threadIdx.x; j < FSST_SCAN_TILE; j += 256) {
        const i64 i = base + j;
        if (i < n) offsets[i + 1] = tile[j + (j >> 4)];
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) offsets[0] = 0;
}
