// fsst_check_ends: after fsst_decode_checked, each string's end against the symbol starts and,
// in columns with stored code offsets, each string's start against the marked code starts.
// Included by fsst_decode.cu after its typedefs and error bits (see "String ends" there).
//
// Code starts.  A column that keeps stored code offsets (a file's column, a blob that stores
// them) says where each string's codes start, and the CPU decoder refuses the column where a
// string's codes do not decode to its length.  The host marks, in a bitmap of the codes
// (cstarts), the code start of every string with codes; the checked decode sets, in a second
// bitmap of the output (mapped, aligned coordinates like the starts, zeroed first), the output
// position of every symbol whose code (an escape for a literal) is so marked; fsst_check_ends
// then requires every non-empty string's output start to be set there.  That is the CPU's rule:
// the non-empty strings' code starts and output starts are equally many (the host checked every
// string's code count against its length, so a string has codes exactly when it has bytes) and
// the decode maps codes to output in order, so each output start being reached from a marked
// code means the k-th marked code starts the k-th non-empty string, and a marked byte that is
// an escape's literal (no symbol starts there) leaves some output start unset.
#pragma once

// Every string's end against the symbol starts fsst_decode_checked set: string i of column c
// ends at col_base[c] + its offset (slot i - col_first[c] + 1 of the column's offsets, 4 or 8
// bytes: col_wide bit 0); an end inside the column's output that is not a symbol start sets
// FSST_ERR_CROSS in col_err[c].  (An end at a split's edge inside the column is where the next
// split's first symbol starts; the ends at the column's end are the next column's to mark, and
// its decode may have failed on its own.)  Ends outside the output (offsets from corrupt
// lengths, flagged on their own) are not looked up.  In a text column (col_wide bit 2) a string
// must not start on a UTF-8 continuation byte either (FSST_ERR_UTF8; with fsst_check_utf8's
// check of the bytes as one stream, every string is then valid UTF-8: the CPU decoder's rule).
// In a column whose code starts were marked (col_wide bit 3), every non-empty string's output
// start must be set in `mapped` (FSST_ERR_CODESTART; see "Code starts" above); `mapped` is not
// read for other columns (any pointer where none is marked).
extern "C" __global__ void __launch_bounds__(256) fsst_check_ends(
    const u64 *__restrict__ starts, const u8 *__restrict__ data, i64 shift, i64 out_size,
    const u8 *__restrict__ offsets,
    i64 n, const i64 *__restrict__ col_first, const i64 *__restrict__ col_base,
    const i64 *__restrict__ col_obyte, const u8 *__restrict__ col_wide, int ncols,
    int *__restrict__ col_err, const u64 *__restrict__ mapped) {
    const i64 step = (i64)gridDim.x * blockDim.x;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        const int c = ncols == 1 ? 0 : column_of(col_first, ncols, i);
        const i64 slot = i - col_first[c] + 1;
        const i64 last = col_first[c + 1] - col_first[c];  // the slot of the column's end
        const u8 *at = offsets + col_obyte[c];
        const bool wide = col_wide[c] & 1;
        const i64 v = wide ? reinterpret_cast<const i64 *>(at)[slot]
                           : (i64)reinterpret_cast<const int *>(at)[slot];
        const i64 end = wide ? reinterpret_cast<const i64 *>(at)[last]
                             : (i64)reinterpret_cast<const int *>(at)[last];
        if (col_wide[c] & 8) {  // string i's start (slot - 1: the joined run's offsets go on)
            const i64 s = wide ? reinterpret_cast<const i64 *>(at)[slot - 1]
                               : (i64)reinterpret_cast<const int *>(at)[slot - 1];
            const i64 g = s + col_base[c];
            if (v > s && g >= 0 && g < out_size) {
                const i64 b = g + shift;
                if (!((mapped[b >> 6] >> (b & 63)) & 1ull)) atomicOr(col_err + c, FSST_ERR_CODESTART);
            }
        }
        if (v >= end) continue;
        const i64 g = v + col_base[c];
        if (g <= 0 || g >= out_size) continue;
        const i64 b = g + shift;
        if (!((starts[b >> 6] >> (b & 63)) & 1ull)) atomicOr(col_err + c, FSST_ERR_CROSS);
        if ((col_wide[c] & 4) && (data[g] & 0xC0) == 0x80) atomicOr(col_err + c, FSST_ERR_UTF8);
    }
}
