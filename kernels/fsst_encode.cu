// FSST encoding on the GPU (fsst_encode.py launches it; the CPU twin is the compiled encoder,
// fsstgpu.native.encode_blocks, whose codes these must equal byte for byte).
//
// FSST's greedy longest match: at each position the longest symbol of the table that matches
// (1-8 bytes, never past the string's end), else an escape (255) and the byte.  The table comes
// as lookups built by fsst_encode.py: one entry per byte (1-byte symbols), one per byte pair
// (2-byte symbols), and the 3-8 byte symbols in ENC_BUCKETS buckets by a hash of their first 3
// bytes, each bucket's symbols longest first.  All 3-8 byte symbols that could match at a
// position share its first 3 bytes, so they are in its bucket, and the first that matches is
// the longest; only when none does are the pair and byte lookups asked.
//
// fsst_encode<WRITE>: one thread per string (a grid-stride loop).  WRITE == false counts each
// string's codes into counts[i]; the launcher's prefix sum turns them into the code offsets and
// WRITE == true writes the codes there.  Null strings (validity bit 0) get no codes.  Strings are
// read 8 bytes at a time from two aligned 8-byte loads (data 8-byte aligned); the last 15 bytes of
// the buffer byte by byte, so nothing past `size` is read.
//
// utf8_first_invalid: one thread per string, strict UTF-8 (no overlong forms, no surrogates,
// nothing above U+10FFFF); atomicMin of the first invalid string's index into *first.

typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef long long i64;
typedef unsigned long long u64;

#define ENC_BUCKETS 1024   // fsst_encode.BUCKETS
#define ENC_NONE 0xFFFF    // a lookup entry without a symbol

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

template <bool WRITE>
__global__ void __launch_bounds__(256)
fsst_encode(const uint8_t* __restrict__ data, i64 size, const i64* __restrict__ offsets, i64 n,
            const uint8_t* __restrict__ validity, const uint16_t* __restrict__ byte_code,
            const uint16_t* __restrict__ pair_code, const uint16_t* __restrict__ bucket,
            const u64* __restrict__ cand_val, const uint8_t* __restrict__ cand_len,
            const uint8_t* __restrict__ cand_code, i64* __restrict__ counts,
            const i64* __restrict__ code_offsets, uint8_t* __restrict__ codes)
{
    const i64 stride = (i64)gridDim.x * blockDim.x;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        i64 pos = offsets[i];
        const i64 end = (validity && !((validity[i >> 3] >> (i & 7)) & 1)) ? pos : offsets[i + 1];
        i64 out = WRITE ? code_offsets[i] : 0;
        while (pos < end) {
            const i64 rem = end - pos;
            u64 w = load_word(data, size, pos);
            if (rem < 8) w &= (1ull << (8 * rem)) - 1;
            int len = 0;
            unsigned code = 255;
            if (rem >= 3) {
                const unsigned b = enc_bucket(w);
                const unsigned hi = bucket[b + 1];
                for (unsigned j = bucket[b]; j < hi; ++j) {
                    const int l = cand_len[j];
                    const u64 mask = l == 8 ? ~0ull : ((1ull << (8 * l)) - 1);
                    if (l <= rem && (w & mask) == cand_val[j]) {
                        len = l;
                        code = cand_code[j];
                        break;
                    }
                }
            }
            if (!len && rem >= 2) {
                const unsigned c = pair_code[w & 0xFFFF];
                if (c != ENC_NONE) { len = 2; code = c; }
            }
            if (!len) {
                const unsigned c = byte_code[w & 0xFF];
                if (c != ENC_NONE) { len = 1; code = c; }
            }
            if (len) {
                if (WRITE) codes[out] = (uint8_t)code;
                out += 1;
                pos += len;
            } else {
                if (WRITE) {
                    codes[out] = 255;
                    codes[out + 1] = (uint8_t)(w & 0xFF);
                }
                out += 2;
                pos += 1;
            }
        }
        if (!WRITE) counts[i] = out;
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
