// fsst_check_utf8: the decoded bytes of text columns checked as UTF-8 streams (RFC 3629: no
// overlong forms, no surrogates U+D800..U+DFFF, nothing past U+10FFFF).  Included by
// fsst_decode.cu after its typedefs and error bits.
//
// The CPU decoder's rule (fsstgpu.utf8): a column's strings are valid UTF-8 exactly when their
// bytes are one valid stream and no string starts on a continuation byte; fsst_check_ends tests
// the starts, this kernel the stream.  Range r (a text column's output bytes [r_start, r_end))
// is cut into chunks of FSST_UTF8_CHUNK bytes, one a thread (r_chunk0: the ranges' first chunk
// ids, nranges + 1).  Each byte is checked where it lies, with no carried state: a lead byte
// checks its own sequence (length, continuations, the second byte's range, inside the range);
// a continuation byte checks that the nearest non-continuation byte within the three before it
// is a lead whose sequence covers it.  A bad byte sets FSST_ERR_UTF8 in col_err[r_col[r]].
//
// Chunks follow the memory's 16-byte boundaries (data's address is `misalign` past one), so a
// range's first and last chunks may be short.  A whole chunk is one 16-byte load, and passes at
// once when it is all ASCII: an ASCII byte is always right where it lies, and a sequence that
// starts before the chunk and runs into it is checked by its lead byte, in the chunk before.
#pragma once
#define FSST_UTF8_CHUNK 16

// the sequence length a lead byte announces; 0 for a byte that cannot start one (a
// continuation, 0xC0 / 0xC1: overlong two-byte forms, 0xF5..0xFF: past U+10FFFF)
__device__ __forceinline__ int utf8_length(u32 c) {
    if (c < 0x80) return 1;
    if (c < 0xC2) return 0;
    if (c < 0xE0) return 2;
    if (c < 0xF0) return 3;
    return c < 0xF5 ? 4 : 0;
}

__device__ __forceinline__ bool utf8_byte_ok(const u8 *__restrict__ data, i64 p, i64 lo,
                                             i64 hi) {
    const u32 c = data[p];
    if (c < 0x80) return true;
    if ((c & 0xC0) == 0x80) {  // a continuation: covered by the lead before it
        for (int back = 1; back <= 3 && p - back >= lo; ++back) {
            const u32 q = data[p - back];
            if ((q & 0xC0) != 0x80) return utf8_length(q) > back;
        }
        return false;
    }
    const int n = utf8_length(c);
    if (n == 0 || p + n > hi) return false;
    const u32 c1 = data[p + 1];
    if ((c1 & 0xC0) != 0x80) return false;
    // the second byte's range: E0 (overlong below U+0800), ED (surrogates), F0 (overlong below
    // U+10000), F4 (past U+10FFFF)
    if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F) || (c == 0xF0 && c1 < 0x90) ||
        (c == 0xF4 && c1 > 0x8F))
        return false;
    for (int k = 2; k < n; ++k)
        if ((data[p + k] & 0xC0) != 0x80) return false;
    return true;
}

extern "C" __global__ void __launch_bounds__(256) fsst_check_utf8(
    const u8 *__restrict__ data, i64 misalign, const i64 *__restrict__ r_start,
    const i64 *__restrict__ r_end, const i64 *__restrict__ r_col,
    const i64 *__restrict__ r_chunk0, int nranges, int *__restrict__ col_err) {
    const i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (nranges <= 0 || t >= r_chunk0[nranges]) return;
    int lo = 0, hi = nranges - 1;  // the range of chunk t: the last r with r_chunk0[r] <= t
    while (lo < hi) {
        const int mid = (lo + hi + 1) >> 1;
        if (r_chunk0[mid] <= t) lo = mid; else hi = mid - 1;
    }
    const i64 rs = r_start[lo], re = r_end[lo];
    // the chunk's 16-byte block of memory: rs's block, then the ones after it
    const i64 block = ((rs + misalign) & ~(i64)(FSST_UTF8_CHUNK - 1)) - misalign +
                      (t - r_chunk0[lo]) * FSST_UTF8_CHUNK;
    const i64 p0 = block > rs ? block : rs;
    const i64 p1 = block + FSST_UTF8_CHUNK < re ? block + FSST_UTF8_CHUNK : re;
    if (p0 == block && p1 == block + FSST_UTF8_CHUNK) {
        const uint4 v = *reinterpret_cast<const uint4 *>(data + block);  // aligned: see above
        if (((v.x | v.y | v.z | v.w) & 0x80808080u) == 0) return;  // all ASCII
    }
    bool ok = true;
    for (i64 p = p0; p < p1; ++p) ok &= utf8_byte_ok(data, p, rs, re);
    if (!ok) atomicOr(col_err + r_col[lo], FSST_ERR_UTF8);
}
