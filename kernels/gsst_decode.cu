// GSST-style FSST decode (experiment): one THREAD per split, the splits' codes word-interleaved.
//
// Layout (built by gsst_decode.py: gsst_gather, then the out-of-place transpose of transpose.cu):
// every split's codes are re-aligned to start at byte 0 of its own stream and padded with zero
// bytes to wmax 4-byte words; word w of stream s lives at words[w * nstreams + s] (nstreams: the
// splits rounded up to 32, the extra streams empty).  The 32 threads of a warp decode 32
// consecutive splits, so when each reads its word w the warp reads 128 contiguous bytes: the loads
// coalesce although every thread walks its own stream.  nbytes[s] is split s's code byte count;
// bytes past it (the padding) are never decoded, only loaded with the word that holds them.
//
// The decode of one split (decode_stream): a 64-bit input buffer refilled one word at a time
// (two words prefetched ahead, since every thread waits on its own loads), two codes decoded per
// refill check; a code is a table index idx = code, or 256 + literal after the escape 255, into
// the same 512-entry tables as fsst_decode.cu (SmemTable / GlobalTable below, lengths in bits).
// Output as in fsst_decode.cu's former thread-per-split kernel: a 64-bit accumulator at an 8-byte
// aligned output position, full words paired into aligned 16-byte stores, the split's unaligned
// head and tail bytes written one by one, so two threads never write the same byte.
//
// Bad input: nothing is read or written out of bounds whatever the layout, split points, codes or
// tables say.  A split whose nbytes exceeds 4 * wmax (gsst_gather marks a bad split so) or whose
// output range lies outside the buffer sets FSST_ERR_SPLIT; an unknown table FSST_ERR_TABLE; an
// undefined code, an escape as the split's last byte, output past the split's range (found before
// the store) or short of it set the other bits.  The bits are fsst_decode.cu's, so the host turns
// them into words with fsst_decode.py's error_message.

typedef unsigned long long u64;
typedef long long i64;
typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned char u8;

// error bits: the same as fsst_decode.cu's (keep them in step)
#define FSST_ERR_SPLIT 1
#define FSST_ERR_CODE 2
#define FSST_ERR_ESCAPE 4
#define FSST_ERR_OVERFLOW 8
#define FSST_ERR_UNDERFLOW 16
#define FSST_ERR_TABLE 32
#define FSST_LB_BAD 0x80  // table entry of a code its table does not define
#define GSST_THREADS 256  // splits (threads) per block: GSST_THREADS in gsst_decode.py
#define GSST_BAD_SPLIT 0xffffffffu  // nbytes of a split whose code range is unusable

// PTX shifts clamp the shift amount (>= 64 gives 0), unlike C++ where it is undefined.  The
// portable branch lets a host build of this file check the logic on a machine without a GPU.
__device__ __forceinline__ u64 shl64(u64 x, u32 s) {
#ifdef __CUDA_ARCH__
    u64 r;
    asm("shl.b64 %0, %1, %2;" : "=l"(r) : "l"(x), "r"(s));
    return r;
#else
    return s >= 64 ? 0 : x << s;
#endif
}
__device__ __forceinline__ u64 shr64(u64 x, u32 s) {
#ifdef __CUDA_ARCH__
    u64 r;
    asm("shr.b64 %0, %1, %2;" : "=l"(r) : "l"(x), "r"(s));
    return r;
#else
    return s >= 64 ? 0 : x >> s;
#endif
}

// The tables, as fsst_decode.cu reads them: idx = code | literal << 8 (entries 256..511 are the
// literal bytes), lengths in bits (8 * length) or FSST_LB_BAD.
struct SmemTable {
    const u64 *sym;  // 512 entries
    const u8 *lb;    // 512 entries
    __device__ __forceinline__ u64 sym_of(u32 idx) const { return sym[idx]; }
    __device__ __forceinline__ u32 lb_chk(u32 idx) const { return lb[idx]; }
};

struct GlobalTable {  // a table in global memory (a tab_sym / tab_len row)
    const u64 *sym;
    const u8 *len;
    __device__ __forceinline__ u64 sym_of(u32 idx) const {
        return idx >= 256 ? (u64)(idx - 256) : sym[idx];
    }
    __device__ __forceinline__ u32 lb_chk(u32 idx) const {
        if (idx >= 256) return 8u;
        const u32 l = len[idx];
        return (l == 0 && idx != 255) ? FSST_LB_BAD : 8u * l;
    }
};

// ---------------------------------------------------------------------------------------------
// Layout: row s of the (nrows, wmax) word matrix = split s's codes from byte 0, zero padded.
// ---------------------------------------------------------------------------------------------

// Word w of row s (s < nsplits): the 4 code bytes at cb + 4w, the bytes past the split zeroed.
// The split's range is checked first; a bad one gives an empty row and nbytes GSST_BAD_SPLIT, so
// that the decode reports it.  Reads stay below ce + 7 (the codes buffer is padded, gsst_decode.py).
__device__ __forceinline__ u32 gather_word(const u8 *__restrict__ codes, i64 cb, u32 n, i64 w) {
    const i64 off = 4 * w;
    if (off >= (i64)n) return 0u;
    const i64 base = cb + off;
    const u32 sh = (u32)(base & 3);
    const u32 *a = reinterpret_cast<const u32 *>(codes + (base - sh));
    const u32 lo = a[0];
    const u32 hi = sh ? a[1] : 0u;  // the next aligned word only when the 4 bytes straddle it
    u32 v = sh ? (u32)((((u64)hi << 32) | lo) >> (8 * sh)) : lo;
    const i64 keep = (i64)n - off;
    if (keep < 4) v &= (1u << (8 * (u32)keep)) - 1u;
    return v;
}

__device__ __forceinline__ u32 split_nbytes(const i64 *__restrict__ split_codes, i64 ncodes,
                                            i64 wmax, i64 s, i64 *cb) {
    *cb = split_codes[s];
    const i64 ce = split_codes[s + 1];
    const bool ok = 0 <= *cb && *cb <= ce && ce <= ncodes && ce - *cb <= 4 * wmax;
    return ok ? (u32)(ce - *cb) : GSST_BAD_SPLIT;
}

// grid (ceil(wmax / 256), rows in flight); each block row walks rows s, s + gridDim.y, ...
// Coalesced both ways: consecutive threads read consecutive code words and write consecutive
// matrix words.  Rows nsplits..nrows-1 are empty streams (zeros, nbytes 0).
extern "C" __global__ void __launch_bounds__(256) gsst_gather(
    const u8 *__restrict__ codes, i64 ncodes, const i64 *__restrict__ split_codes, i64 nsplits,
    i64 nrows, i64 wmax, u32 *__restrict__ mat, u32 *__restrict__ nbytes) {
    const i64 w = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    for (i64 s = blockIdx.y; s < nrows; s += gridDim.y) {
        i64 cb = 0;
        u32 n = 0;
        if (s < nsplits) n = split_nbytes(split_codes, ncodes, wmax, s, &cb);
        if (w == 0) nbytes[s] = n;
        if (w < wmax) mat[s * wmax + w] = n == GSST_BAD_SPLIT ? 0u : gather_word(codes, cb, n, w);
    }
}

// ---------------------------------------------------------------------------------------------
// Decode: one thread per split.
// ---------------------------------------------------------------------------------------------

// Bytes [from, 8) of word at outa + pos (pos 8-aligned, pos + from >= the split's start): a head.
__device__ __forceinline__ void store_bytes(u8 *outa, i64 pos, u64 word, u32 from, u32 to) {
#pragma unroll 1
    for (u32 j = from; j < to; ++j) outa[pos + j] = (u8)(word >> (8 * j));
}

// Decode stream p (word w at p[w * stride]) of n code bytes into outa[ob, oe) (global-aligned
// coordinates: outa is 16-byte aligned).  Returns the error bits (0: the range is filled).
template <class Table>
__device__ __forceinline__ int decode_stream(const u32 *__restrict__ p, i64 stride, u32 n,
                                             const Table tab, u8 *__restrict__ outa, i64 ob,
                                             i64 oe) {
    const u32 nw = (n + 3) >> 2;
    u32 loaded = 0;  // words loaded into the queue (q0, q1) so far
    u32 q0 = 0, q1 = 0;
    if (loaded < nw) { q0 = p[0]; p += stride; ++loaded; }
    if (loaded < nw) { q1 = p[0]; p += stride; ++loaded; }
    u32 wleft = nw;  // words not yet moved into buf
    u64 buf = 0;     // input bytes, the next code in the low byte
    u32 nb = 0;      // bytes in buf (the last word's padding included)
    u32 left = n;    // code bytes not yet decoded
    // output: acc holds afill bytes that belong at the 8-aligned position opos
    i64 opos = ob & ~(i64)7;
    u32 afill = (u32)(ob & 7);  // bytes before ob: zeros, never written
    u64 acc = 0, low = 0;       // low: the first half of a 16-byte chunk awaiting its second
    bool has_low = false;
    while (left) {
        // nb <= 4 -> after the refill nb >= 4; with no word left, nb >= left: either way the two
        // codes below (at most 2 bytes each, and at most `left` bytes) are in buf
        if (nb <= 4 && wleft) {
            buf |= shl64((u64)q0, 8 * nb);
            nb += 4;
            --wleft;
            q0 = q1;
            if (loaded < nw) { q1 = p[0]; p += stride; ++loaded; }
        }
#pragma unroll
        for (int u = 0; u < 2; ++u) {
            if (left) {
                const u32 c = (u32)buf & 0xffu;
                const bool esc = c == 255u;
                if (esc && left < 2) return FSST_ERR_ESCAPE;
                const u32 idx = esc ? 256u + ((u32)(buf >> 8) & 0xffu) : c;
                const u32 used = esc ? 2u : 1u;
                buf = shr64(buf, 8 * used);
                nb -= used;
                left -= used;
                const u32 lb = tab.lb_chk(idx);
                if (lb & FSST_LB_BAD) return FSST_ERR_CODE;
                const u64 sym = tab.sym_of(idx);
                const u32 s = 8 * afill;
                acc |= shl64(sym, s);
                const u64 ov = shr64(sym, 64 - s);  // s == 0: nothing overflows
                afill += lb >> 3;
                if (afill >= 8) {
                    if (opos + 8 > oe) return FSST_ERR_OVERFLOW;  // before anything is stored
                    if (opos < ob) {
                        store_bytes(outa, opos, acc, (u32)(ob - opos), 8);
                    } else if (opos & 8) {  // second half of a 16-byte chunk
                        if (has_low) {
                            uint4 v;
                            v.x = (u32)low;
                            v.y = (u32)(low >> 32);
                            v.z = (u32)acc;
                            v.w = (u32)(acc >> 32);
                            *reinterpret_cast<uint4 *>(outa + opos - 8) = v;
                        } else {
                            *reinterpret_cast<u64 *>(outa + opos) = acc;
                        }
                        has_low = false;
                    } else {
                        low = acc;
                        has_low = true;
                    }
                    acc = ov;
                    afill -= 8;
                    opos += 8;
                }
            }
        }
    }
    if (has_low) *reinterpret_cast<u64 *>(outa + opos - 8) = low;
    const i64 end = opos + afill;
    if (end > oe) return FSST_ERR_OVERFLOW;
    store_bytes(outa, opos, acc, opos < ob ? (u32)(ob - opos) : 0u, afill);
    return end < oe ? FSST_ERR_UNDERFLOW : 0;
}

// Split k's checks and decode; returns the error bits.
template <class Table>
__device__ __forceinline__ int decode_split(const u32 *__restrict__ words, i64 nstreams, i64 wmax,
                                            const u32 *__restrict__ nbytes,
                                            const i64 *__restrict__ split_out, i64 k,
                                            const Table tab, u8 *__restrict__ outa, i64 shift,
                                            i64 out_size) {
    const u32 n = nbytes[k];
    const i64 ob = split_out[k], oe = split_out[k + 1];
    if (!((i64)n <= 4 * wmax && 0 <= ob && ob <= oe && oe <= out_size)) return FSST_ERR_SPLIT;
    return decode_stream(words + k, nstreams, n, tab, outa, ob + shift, oe + shift);
}

// Table id of split k's block: the block's first and last splits' tables are in shared memory.
__device__ __forceinline__ void load_table(const u64 *__restrict__ tab_sym,
                                           const u8 *__restrict__ tab_len, int t, u32 i,
                                           u64 *sym, u8 *lb) {
    const u32 l = tab_len[(i64)t * 256 + i];
    sym[i] = tab_sym[(i64)t * 256 + i];
    lb[i] = (u8)((l == 0 && i != 255) ? FSST_LB_BAD : 8 * l);
    sym[256 + i] = (u64)i;  // literals
    lb[256 + i] = 8;
}

// words: (wmax, nstreams) u32, nstreams >= nsplits; nbytes: nstreams u32; split_out: int64 of
// nsplits + 1; split_table: u16 of nsplits; tables as fsst_decode; out: out_size bytes.
extern "C" __global__ void __launch_bounds__(GSST_THREADS) gsst_decode(
    const u32 *__restrict__ words, i64 nstreams, i64 wmax, const u32 *__restrict__ nbytes,
    const i64 *__restrict__ split_out, const u16 *__restrict__ split_table, i64 nsplits,
    const u64 *__restrict__ tab_sym, const u8 *__restrict__ tab_len, int ntables,
    u8 *__restrict__ out, i64 out_size, int *__restrict__ err) {
    __shared__ u64 s_sym[2][512];
    __shared__ u8 s_lb[2][512];
    const i64 k0 = (i64)blockIdx.x * GSST_THREADS;
    const i64 k = k0 + threadIdx.x;
    const i64 klast = (k0 + GSST_THREADS < nsplits ? k0 + GSST_THREADS : nsplits) - 1;
    const int t0 = split_table[k0], t1 = split_table[klast];
    {
        const int c0 = t0 < ntables ? t0 : 0, c1 = t1 < ntables ? t1 : 0;
        load_table(tab_sym, tab_len, c0, threadIdx.x, s_sym[0], s_lb[0]);
        load_table(tab_sym, tab_len, c1, threadIdx.x, s_sym[1], s_lb[1]);
    }
    __syncthreads();
    if (k >= nsplits) return;
    const int t = split_table[k];
    int e;
    // global-aligned output coordinates: outa is 16-byte aligned, outa + shift == out
    const i64 shift = (i64)((unsigned long long)out & 15);
    u8 *outa = out - shift;
    if (t >= ntables) {
        e = FSST_ERR_TABLE;
    } else if (t == t0 || t == t1) {
        const int slot = t == t0 ? 0 : 1;
        e = decode_split(words, nstreams, wmax, nbytes, split_out, k,
                         SmemTable{s_sym[slot], s_lb[slot]}, outa, shift, out_size);
    } else {  // a third table in the block (table boundaries only): read from global memory
        e = decode_split(words, nstreams, wmax, nbytes, split_out, k,
                         GlobalTable{tab_sym + (i64)t * 256, tab_len + (i64)t * 256}, outa,
                         shift, out_size);
    }
    if (e) atomicOr(err, e);
}
