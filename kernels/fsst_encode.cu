// FSST encoding on the GPU (fsst_encode.py launches it; the CPU twin is the compiled encoder,
// fsstgpu.native.encode_blocks, whose codes these must equal byte for byte).
//
// FSST's greedy longest match: at each position the longest symbol of the table that matches
// (1-8 bytes, never past the string's end), else an escape (255) and the byte.  The table comes
// as lookups built by fsst_encode.py: one entry per byte pair and then per byte (the last byte
// of a string) with the best 1-2 byte match, and the 3-8 byte symbols in ENC_BUCKETS buckets by
// a hash of their first 3 bytes, each bucket's symbols longest first.  All 3-8 byte symbols
// that could match at a position share its first 3 bytes, so they are in its bucket, and the
// first that matches is the longest; only when none does is the 1-2 byte match taken.
//
// fsst_encode_stage: one thread per string (a grid-stride loop) parses it once, its codes into a
// stage at the string's byte position and their count into counts[i]; the launcher's prefix
// sum turns the counts into the code offsets and fsst_encode_compact (a warp per 32 strings)
// copies the codes there.  Null strings (validity bit 0) get no codes.  Strings are
// read 8 bytes at a time from two aligned 8-byte loads (data 8-byte aligned); the last 15 bytes of
// the buffer byte by byte, so nothing past `size` is read.  Strings longer than long_min bytes
// are left to fsst_encode_chunks_count / _write (below; encode_chunks.py plans and resolves
// their chunks), a thread a chunk.
//
// utf8_first_invalid: one thread per string, strict UTF-8 (no overlong forms, no surrogates,
// nothing above U+10FFFF); atomicMin of the first invalid string's index into *first.  The
// launcher asks it only where the whole column's bytes, checked as one stream, fail: it names
// the string.

typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef long long i64;
typedef unsigned long long u64;

#define ENC_BUCKETS 1024   // fsst_encode.BUCKETS

__device__ __forceinline__ unsigned enc_bucket(u64 w)
{
    return ((unsigned)(w & 0xFFFFFF) * 0x9E3779B1u) >> 22;   // 10 bits: fsst_encode.bucket_of
}

// The 8 bytes at pos (bytes at or past size read as 0).
__device__ __forceinline__ u64 load_word(const uint8_t* __restrict__ data, i64 size, i64 pos)
{
    const i64 a = pos & ~7LL;
    const int sh = (int)(pos & 7) * 8;
    if (a + 16 <= size) {
        const u64 lo = __ldg(reinterpret_cast<const u64*>(data + a));
        const u64 hi = __ldg(reinterpret_cast<const u64*>(data + a + 8));
        return sh ? (lo >> sh) | (hi << (64 - sh)) : lo;
    }
    u64 w = 0;
    for (int k = 0; k < 8 && pos + k < size; ++k) w |= (u64)data[pos + k] << (8 * k);
    return w;
}

// The symbol at pos, rem bytes before its string's end (rem >= 1; only whether it is below 2, 3
// or 8 and the candidates' lengths matter): its length, its code in *code; 0 when no symbol
// matches (an escape of the byte, which is *code).  short_best is loaded before the bucket's
// candidates are looked at, so the two loads' latencies overlap.
__device__ __forceinline__ int enc_match_rem(const uint8_t* __restrict__ data, i64 size, i64 pos,
                                             int rem, const uint16_t* __restrict__ short_best,
                                             const unsigned* __restrict__ bucket_range,
                                             const u64* __restrict__ cand_vm,
                                             const uint16_t* __restrict__ cand_lc,
                                             unsigned* code)
{
    u64 w = load_word(data, size, pos);
    if (rem < 8) w &= (1ull << (8 * rem)) - 1;
    const unsigned lo16 = (unsigned)w & 0xFFFF;
    const unsigned best = __ldg(short_best + (rem >= 2 ? lo16 : 65536u + (lo16 & 0xFF)));
    if (rem >= 3) {
        const unsigned range = __ldg(bucket_range + enc_bucket(w));
        for (unsigned j = range & 0xFFFF; j < (range >> 16); ++j) {
            const unsigned lc = __ldg(cand_lc + j);
            const ulonglong2 vm = __ldg(reinterpret_cast<const ulonglong2*>(cand_vm) + j);
            if ((int)(lc & 0xFF) <= rem && (w & vm.y) == vm.x) {
                *code = lc >> 8;
                return (int)(lc & 0xFF);
            }
        }
    }
    *code = best & 0xFF;
    return (int)(best >> 8);
}

#define ENC_TABLE short_best, bucket_range, cand_vm, cand_lc
#define ENC_TABLE_PARAMS const uint16_t* __restrict__ short_best, \
    const unsigned* __restrict__ bucket_range, const u64* __restrict__ cand_vm, \
    const uint16_t* __restrict__ cand_lc

// A column of several tables (a table a block of strings, as the CPU encoder takes them): the
// kernels take every table's lookups laid end to end, table t's at t times these strides
// (fsst_encode.TABLE_STRIDES), and the block starts (ntables of them, the string where each
// table starts); string i uses the last table starting at or before it, found by a binary
// search (the strings of a warp almost always share it, so its loads are broadcasts).  Each
// of these kernels comes twice: MULTI false for one table (no search, and none of its
// registers: the stage kernel's 31 became 37 with them, 48 warps an SM in place of 64), true
// for several.
#define ENC_SHORT_STRIDE (65536 + 256)
#define ENC_CAND_STRIDE 256
#define ENC_TABLES_PARAMS const uint16_t* __restrict__ short_best0, \
    const unsigned* __restrict__ bucket_range0, const u64* __restrict__ cand_vm0, \
    const uint16_t* __restrict__ cand_lc0, const i64* __restrict__ table_starts, i64 ntables

__device__ __forceinline__ i64 enc_table_of(const i64* __restrict__ starts, i64 ntables, i64 i)
{
    i64 lo = 0, hi = ntables - 1;
    while (lo < hi) {
        const i64 mid = (lo + hi + 1) >> 1;
        if (__ldg(starts + mid) <= i) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

// The lookups of string i's table under the names ENC_TABLE passes on.
#define ENC_USE_TABLE(i) \
    const i64 enc_t = MULTI && ntables > 1 ? enc_table_of(table_starts, ntables, (i)) : 0; \
    const uint16_t* __restrict__ short_best = short_best0 + enc_t * ENC_SHORT_STRIDE; \
    const unsigned* __restrict__ bucket_range = bucket_range0 + enc_t * ENC_BUCKETS; \
    const u64* __restrict__ cand_vm = cand_vm0 + enc_t * (2 * ENC_CAND_STRIDE); \
    const uint16_t* __restrict__ cand_lc = cand_lc0 + enc_t * ENC_CAND_STRIDE

// The symbol at pos of a string ending at end (pos < end): enc_match_rem's.
__device__ __forceinline__ int enc_match(const uint8_t* __restrict__ data, i64 size, i64 pos,
                                         i64 end, ENC_TABLE_PARAMS, unsigned* code)
{
    return enc_match_rem(data, size, pos, end - pos < 8 ? (int)(end - pos) : 8, ENC_TABLE, code);
}

// Encode from pos while pos < stop (the symbols bounded by the string's end): the codes go to
// codes[out...] when WRITE; returns the position reached (>= stop) and adds the codes to *out.
template <bool WRITE>
__device__ __forceinline__ i64 enc_run(const uint8_t* __restrict__ data, i64 size, i64 pos,
                                       i64 stop, i64 end, ENC_TABLE_PARAMS,
                                       uint8_t* __restrict__ codes, i64* out)
{
    i64 o = *out;
    while (pos < stop) {
        unsigned code;
        const int len = enc_match(data, size, pos, end, ENC_TABLE, &code);
        if (len) {
            if (WRITE) codes[o] = (uint8_t)code;
            o += 1;
            pos += len;
        } else {
            if (WRITE) {
                codes[o] = 255;
                codes[o + 1] = (uint8_t)code;
            }
            o += 2;
            pos += 1;
        }
    }
    *out = o;
    return pos;
}

// The strings of at most long_min bytes (longer ones are left to the chunk kernels below).
__device__ __forceinline__ bool short_string(const i64* __restrict__ offsets,
                                             const uint8_t* __restrict__ validity, i64 i,
                                             i64 long_min, i64* pos, i64* end)
{
    *pos = offsets[i];
    *end = (validity && !((validity[i >> 3] >> (i & 7)) & 1)) ? *pos : offsets[i + 1];
    return *end - *pos <= long_min;
}

// One thread a short string: its codes into the stage at the string's own byte position (a
// string's codes fit its bytes unless escapes outnumber its multi-byte symbols: those are cut at
// the string's end and written again by fsst_encode_compact), and their count into counts[i].
// The one parse a string gets before the codes' size is known (a count pass and a write pass
// parsed it twice).
// The long strings are counted on the way (summary[0] += their chunks of `chunk` bytes,
// summary[1] = the most chunks of one), so a column without any needs no pass of its own to
// find out.
// `bad` (or null): fsst_encode_check's flag, read before anything else; where it is set the
// offsets may point anywhere and the kernel leaves (the launcher raises after its one wait).
// A short string's place and codes' count fit 32 bits (the launcher keeps long_min below 2**28,
// or the column below 2**30 bytes).  Each warp's 32 strings are staged in a 2 KiB window of
// shared memory laid over the stage from the first string's 16-byte boundary (a string
// reaching past it goes to the stage in global memory), which the warp then copies out in
// 16-byte stores: a byte store a lane into its own string's sector held L2 at 69% of its
// throughput (BENCHMARKS.md section 61).
#define WARP_STAGE 2048
template <bool MULTI>
__global__ void __launch_bounds__(256)
fsst_encode_stage(const uint8_t* __restrict__ data, i64 size, const i64* __restrict__ offsets,
                  i64 n, const uint8_t* __restrict__ validity, ENC_TABLES_PARAMS,
                  i64* __restrict__ counts, uint8_t* __restrict__ stage, i64 long_min, i64 chunk,
                  unsigned long long* __restrict__ summary,
                  const unsigned long long* __restrict__ bad)
{
    __shared__ __align__(16) uint8_t window[8][WARP_STAGE];
    if (bad && *bad) return;
    const int lane = threadIdx.x & 31;
    uint8_t* const sh = window[threadIdx.x >> 5];
    const i64 stride = (i64)gridDim.x * blockDim.x;
    for (i64 first = (i64)blockIdx.x * blockDim.x + (threadIdx.x & ~31); first < n;
         first += stride) {
        const i64 i = first + lane;
        const i64 base = offsets[first] & ~15LL;   // the window's byte 0 in the stage
        i64 pos = 0, end = 0;
        if (i < n && !short_string(offsets, validity, i, long_min, &pos, &end)) {
            const unsigned long long chunks = (unsigned long long)((end - pos) / chunk);
            atomicAdd(summary, chunks);
            atomicMax(summary + 1, chunks);
            end = pos;
        }
        ENC_USE_TABLE(i);
        const int cap = (int)(end - pos);
        const bool near = end - base <= WARP_STAGE;
        // the window is copied out up to the first string staged in global memory (the
        // strings after it end further out: none of them is in the window); its place capped
        // at the window before it is cut to 32 bits (one 4 GiB past the first string, behind a
        // null or a long string, cut to a small number, stopped the copy-out short)
        const unsigned upto = __reduce_min_sync(
            0xffffffffu, near || cap == 0 || pos - base >= WARP_STAGE ? WARP_STAGE
                                                                      : (unsigned)(pos - base));
        uint8_t* __restrict__ dst = near ? sh + (pos - base) : stage + pos;
        int r = 0, o = 0;
        while (r < cap) {
            unsigned code;
            const int len = enc_match_rem(data, size, pos + r, cap - r, ENC_TABLE, &code);
            if (len) {
                if (o < cap) dst[o] = (uint8_t)code;
                o += 1;
                r += len;
            } else {
                if (o < cap) dst[o] = 255;
                if (o + 1 < cap) dst[o + 1] = (uint8_t)code;
                o += 2;
                r += 1;
            }
        }
        if (i < n) counts[i] = o;
        __syncwarp();
        // the window's bytes [from, to): this warp's strings' (not the warp before's)
        const i64 last = first + 32 < n ? first + 32 : n;
        const int from = (int)(offsets[first] - base);
        const i64 span = offsets[last] - base;
        const int to = (int)(span < (i64)upto ? span : (i64)upto);
        for (int k = lane * 16; k < to; k += 512) {
            if (k >= from && k + 16 <= to) {
                *reinterpret_cast<uint4*>(stage + base + k) =
                    *reinterpret_cast<const uint4*>(sh + k);
            } else {
                for (int b = k; b < k + 16 && b < to; ++b) {
                    if (b >= from) stage[base + b] = sh[b];
                }
            }
        }
        __syncwarp();   // before the next strings reuse the window
    }
}


// A warp per 32 consecutive strings: each short string's staged codes copied to code_offsets[i]
// by eight lanes side by side, four strings at a time (consecutive bytes: whole sectors a store,
// where one thread a string stored a byte a lane into 32 strings' sectors); a string whose codes
// outgrew its bytes is encoded again by its lane straight into place.
template <bool MULTI>
__global__ void __launch_bounds__(256)
fsst_encode_compact(const uint8_t* __restrict__ data, i64 size, const i64* __restrict__ offsets,
                    i64 n, const uint8_t* __restrict__ validity, ENC_TABLES_PARAMS,
                    const i64* __restrict__ code_offsets, const uint8_t* __restrict__ stage,
                    uint8_t* __restrict__ codes, i64 long_min)
{
    const int lane = threadIdx.x & 31;
    const i64 warps = (i64)gridDim.x * (blockDim.x >> 5);
    for (i64 first = ((i64)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5)) * 32; first < n;
         first += warps * 32) {
        const i64 i = first + lane;
        i64 pos = 0, end = 0, at = 0, count = 0;
        if (i < n && short_string(offsets, validity, i, long_min, &pos, &end)) {
            ENC_USE_TABLE(i);
            at = code_offsets[i];
            count = code_offsets[i + 1] - at;
            if (count > end - pos) {   // cut in the stage: parsed again into place
                i64 out = at;
                enc_run<true>(data, size, pos, end, end, ENC_TABLE, codes, &out);
                count = 0;
            }
        }
        // four strings a step, eight lanes each (a string holds ~10 codes: one lane a byte of
        // one string at a time left two thirds of the lanes idle)
        const int group = lane >> 3, sub = lane & 7;
        for (int s = 0; s < 32; s += 4) {
            const int from = s + group;
            const i64 c = __shfl_sync(0xffffffffu, count, from);
            const i64 src = __shfl_sync(0xffffffffu, pos, from);
            const i64 dst = __shfl_sync(0xffffffffu, at, from);
            for (i64 k = sub; k < c; k += 8) codes[dst + k] = stage[src + k];
        }
    }
}


// Long strings in chunks (one thread a chunk).  Chunk g of string i = chunk_string[g] is the
// k-th (k = g - chunk_first[i]) of its nchunks[i]: bytes [s, e), s = offsets[i] + k * chunk,
// e = s + chunk, the last one to the string's end (so every chunk holds >= chunk >= 64 bytes).
// The string's greedy parse enters the chunk at s + j for some j < 8 (a symbol is at most 8
// bytes), j = 0 in a string's first chunk.  The count pass parses the chunk from each of the 8
// entries and records where each parse leaves it (exits[8 g + j] = exit - e, the next chunk's
// entry) and its codes (counts[8 g + j]); the launcher resolves the true entries (a scan of
// these maps) and the write pass parses each chunk from its entry, codes at chunk_out[g].
// Text parses from nearby entries meet within a few symbols: entries 1-7 stop at the first
// position that entry 0's parse also reached in the chunk's first 64 bytes (bitmaps of its
// code starts and escapes give its codes from there); where they do not meet (a table of
// "aa" over "aaaa..."), the whole chunk is parsed again, at most 8 times in all.
__device__ __forceinline__ void chunk_bounds(const i64* __restrict__ offsets,
                                             const i64* __restrict__ chunk_string,
                                             const i64* __restrict__ chunk_first,
                                             const i64* __restrict__ nchunks, i64 chunk, i64 g,
                                             i64* s, i64* e, i64* end, i64* k)
{
    const i64 i = chunk_string[g];
    *k = g - chunk_first[i];
    *s = offsets[i] + *k * chunk;
    *end = offsets[i + 1];
    *e = *k == nchunks[i] - 1 ? *end : *s + chunk;
}

template <bool MULTI>
__global__ void __launch_bounds__(256)
fsst_encode_chunks_count(const uint8_t* __restrict__ data, i64 size,
                         const i64* __restrict__ offsets, const i64* __restrict__ chunk_string,
                         const i64* __restrict__ chunk_first, const i64* __restrict__ nchunks,
                         i64 chunk, i64 g_count, ENC_TABLES_PARAMS, uint8_t* __restrict__ exits,
                         int* __restrict__ counts)
{
    const i64 stride = (i64)gridDim.x * blockDim.x;
    for (i64 g = (i64)blockIdx.x * blockDim.x + threadIdx.x; g < g_count; g += stride) {
        i64 s, e, end, k;
        chunk_bounds(offsets, chunk_string, chunk_first, nchunks, chunk, g, &s, &e, &end, &k);
        ENC_USE_TABLE(chunk_string[g]);
        u64 starts = 0, escapes = 0;   // entry 0's code starts and escapes in [s, s + 64)
        i64 pos = s, n0 = 0;
        while (pos < e) {
            unsigned code;
            const int len = enc_match(data, size, pos, end, ENC_TABLE, &code);
            if (pos - s < 64) {
                starts |= 1ull << (pos - s);
                if (!len) escapes |= 1ull << (pos - s);
            }
            n0 += len ? 1 : 2;
            pos += len ? len : 1;
        }
        const i64 exit0 = pos;
        exits[8 * g] = (uint8_t)(exit0 - e);
        counts[8 * g] = (int)n0;
        for (int j = 1; j < 8; ++j) {
            i64 p = s + j, nj = 0;
            if (k == 0) {   // a string's first chunk is entered at its start only
                p = exit0;
                nj = n0;
            }
            while (p < e && p - s < 64) {
                const int b = (int)(p - s);
                if ((starts >> b) & 1) {   // entry 0's parse from here on
                    const u64 below = (1ull << b) - 1;
                    nj += n0 - __popcll(starts & below) - __popcll(escapes & below);
                    p = exit0;
                    break;
                }
                unsigned code;
                const int len = enc_match(data, size, p, end, ENC_TABLE, &code);
                nj += len ? 1 : 2;
                p += len ? len : 1;
            }
            p = enc_run<false>(data, size, p, e, end, ENC_TABLE, nullptr, &nj);
            exits[8 * g + j] = (uint8_t)(p - e);
            counts[8 * g + j] = (int)nj;
        }
    }
}


// The write pass also finds the splits' cuts inside long strings when cut_code is given (the
// CPU's rule, fsstgpu.scan: the first code boundary at or past each multiple of cut_size bytes
// from the string's start, none at its end).  With cut_size >= 8 a symbol spans at most one
// multiple, so multiple m of string i has its own slot cut_first[i] + m - 1 (the launcher
// sizes them from the lengths, filled with -1): the chunk whose symbol reaches that boundary
// writes its code position and its place in the string (cut_rel) there.
template <bool MULTI>
__global__ void __launch_bounds__(256)
fsst_encode_chunks_write(const uint8_t* __restrict__ data, i64 size,
                         const i64* __restrict__ offsets, const i64* __restrict__ chunk_string,
                         const i64* __restrict__ chunk_first, const i64* __restrict__ nchunks,
                         i64 chunk, i64 g_count, ENC_TABLES_PARAMS,
                         const uint8_t* __restrict__ entries, const i64* __restrict__ chunk_out,
                         uint8_t* __restrict__ codes, i64 cut_size,
                         const i64* __restrict__ cut_first, i64* __restrict__ cut_code,
                         i64* __restrict__ cut_rel)
{
    const i64 stride = (i64)gridDim.x * blockDim.x;
    for (i64 g = (i64)blockIdx.x * blockDim.x + threadIdx.x; g < g_count; g += stride) {
        i64 s, e, end, k;
        chunk_bounds(offsets, chunk_string, chunk_first, nchunks, chunk, g, &s, &e, &end, &k);
        ENC_USE_TABLE(chunk_string[g]);
        i64 out = chunk_out[g];
        if (!cut_code) {
            enc_run<true>(data, size, s + entries[g], e, end, ENC_TABLE, codes, &out);
            continue;
        }
        const i64 i = chunk_string[g];
        const i64 start = offsets[i], length = end - start;
        i64 pos = s + entries[g];
        while (pos < e) {
            const i64 before = pos - start;
            pos = enc_run<true>(data, size, pos, pos + 1, end, ENC_TABLE, codes, &out);
            const i64 rel = pos - start;   // a code boundary
            if (rel < length && rel / cut_size > before / cut_size) {
                const i64 slot = cut_first[i] + rel / cut_size - 1;
                cut_code[slot] = out;
                cut_rel[slot] = rel;
            }
        }
    }
}


// Device strings checked before any kernel reads by their offsets, in one pass (the launcher
// reads the results with the encode's summary, in its one wait): a thread a string, each
// string's own bounds (0 <= offsets[i] <= offsets[i + 1] <= size for every i is the same as
// offsets in order and inside the data).  lengths[i]: the valid strings' bytes (0 for nulls
// and for strings out of bounds).  check[0] |= 1 where a string is out of bounds; check[1]: the
// most bytes of a valid string; check[2] |= 1 where text (`text` != 0) has a valid non-empty
// string starting, or ending before offsets[n], on a UTF-8 continuation byte (with the stream
// check of the bytes [offsets[0], offsets[n]), every valid string is then UTF-8); check[3]: the
// valid strings' bytes.
__device__ __forceinline__ u64 warp_or(u64 v)
{
    for (int d = 16; d; d >>= 1) v |= __shfl_xor_sync(0xffffffffu, v, d);
    return v;
}

__device__ __forceinline__ u64 warp_max(u64 v)
{
    for (int d = 16; d; d >>= 1) {
        const u64 o = __shfl_xor_sync(0xffffffffu, v, d);
        v = o > v ? o : v;
    }
    return v;
}

__device__ __forceinline__ u64 warp_sum(u64 v)
{
    for (int d = 16; d; d >>= 1) v += __shfl_xor_sync(0xffffffffu, v, d);
    return v;
}

extern "C" __global__ void __launch_bounds__(256)
fsst_encode_check(const uint8_t* __restrict__ data, i64 size, const i64* __restrict__ offsets,
                  i64 n, const uint8_t* __restrict__ validity, int text,
                  i64* __restrict__ lengths, unsigned long long* __restrict__ check)
{
    const i64 stride = (i64)gridDim.x * blockDim.x;
    const i64 hi = offsets[n] < size ? offsets[n] : size;   // (string ends read below it only)
    u64 bad = 0, most = 0, inside = 0, bytes = 0;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const i64 s = offsets[i], e = offsets[i + 1];
        i64 len = 0;
        if (s < 0 || e < s || e > size) {
            bad = 1;
        } else if (!validity || ((validity[i >> 3] >> (i & 7)) & 1)) {
            len = e - s;
            most = (u64)len > most ? (u64)len : most;
            bytes += (u64)len;
            if (text && len && ((data[s] & 0xC0) == 0x80
                                || (e < hi && (data[e] & 0xC0) == 0x80))) inside = 1;
        }
        lengths[i] = len;
    }
    // (every lane of the grid's warps gets here: the block size is a multiple of 32)
    bad = warp_or(bad);
    inside = warp_or(inside);
    most = warp_max(most);
    bytes = warp_sum(bytes);
    if ((threadIdx.x & 31) == 0) {
        if (bad) atomicOr(check, bad);
        if (most) atomicMax(check + 1, most);
        if (inside) atomicOr(check + 2, inside);
        if (bytes) atomicAdd(check + 3, bytes);
    }
}

extern "C" __global__ void __launch_bounds__(256)
utf8_first_invalid(const uint8_t* __restrict__ data, const i64* __restrict__ offsets, i64 n,
                   const uint8_t* __restrict__ validity, unsigned long long* first)
{
    const i64 stride = (i64)gridDim.x * blockDim.x;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        if (validity && !((validity[i >> 3] >> (i & 7)) & 1)) continue;
        i64 p = offsets[i];
        const i64 end = offsets[i + 1];
        bool ok = true;
        while (ok && p < end) {
            const unsigned c = data[p];
            if (c < 0x80) { ++p; continue; }
            int more;
            unsigned lo = 0x80, hi = 0xBF;   // the second byte's range
            if (c >= 0xC2 && c <= 0xDF) more = 1;
            else if (c == 0xE0) { more = 2; lo = 0xA0; }
            else if (c == 0xED) { more = 2; hi = 0x9F; }
            else if (c >= 0xE1 && c <= 0xEF) more = 2;
            else if (c == 0xF0) { more = 3; lo = 0x90; }
            else if (c == 0xF4) { more = 3; hi = 0x8F; }
            else if (c >= 0xF1 && c <= 0xF3) more = 3;
            else { ok = false; break; }
            if (end - p <= more) { ok = false; break; }
            const unsigned c1 = data[p + 1];
            if (c1 < lo || c1 > hi) { ok = false; break; }
            for (int k = 2; k <= more; ++k) {
                const unsigned ck = data[p + k];
                if (ck < 0x80 || ck > 0xBF) { ok = false; break; }
            }
            p += more + 1;
        }
        if (!ok) atomicMin(first, (unsigned long long)i);
    }
}
