// stored_rows (storage_rows.h): one serial pass, every read inside the arrays the binding sized.
#include "storage_rows.h"

#include <algorithm>
#include <utility>

namespace fsstgpu_native {

namespace {

constexpr int kWord = 64;  // rows a step: one 64-bit word of each bitmap

// Bits first .. first + m - 1 (m in 1..64) of a bitmap as a word, no bitmap as ones; reads no
// byte past the one holding the last bit.
uint64_t word_of(const Bits& b, int64_t i, int m) {
    const uint64_t mask = m == kWord ? ~uint64_t(0) : (uint64_t(1) << m) - 1;
    if (!b.bits) return mask;
    const int64_t at = b.first + i;
    const uint8_t* p = b.bits + (at >> 3);
    const int shift = int(at & 7);
    const int bytes = (shift + m + 7) >> 3;  // 1..9
    uint64_t w = 0;
    for (int k = 0; k < bytes && k < 8; ++k) w |= uint64_t(p[k]) << (8 * k);
    w >>= shift;
    if (bytes == 9) w |= uint64_t(p[8]) << (64 - shift);
    return w & mask;
}

template <class Length, bool kRebase>
RowsFound rows_of(const StoredRows& in, const Length* __restrict lengths,
                  int64_t* __restrict co_out, int64_t* __restrict len_out) {
    RowsFound found;
    const int64_t n = in.n, ntable_of = in.ntable_of;
    const int64_t* __restrict co = in.code_offsets;
    const uint16_t* __restrict index = in.table_index;
    const int32_t* __restrict table_of = in.table_of;
    const int64_t base = co[0];
    auto fail = [&](RowsStatus s) {
        found.status = s;
        return std::move(found);
    };
    if (base < 0 || co[n] > in.data_size) return fail(RowsStatus::kOffsets);
    found.run_starts.push_back(0);
    int32_t current = -1;   // the table of the run being read (-1: no valid row yet)
    int64_t run_index = -1;  // a dictionary index of that table
    int64_t nulls[4] = {0, 0, 0, 0};
    if (kRebase) co_out[0] = 0;
    for (int64_t i0 = 0; i0 < n; i0 += kWord) {
        const int m = int(std::min<int64_t>(kWord, n - i0));
        const uint64_t row = word_of(in.row, i0, m), codes = word_of(in.codes_valid, i0, m),
                       lens = word_of(in.lengths_valid, i0, m),
                       tables = word_of(in.table_valid, i0, m);
        const uint64_t all = m == kWord ? ~uint64_t(0) : (uint64_t(1) << m) - 1;
        nulls[0] += m - __builtin_popcountll(row);
        nulls[1] += m - __builtin_popcountll(codes);
        nulls[2] += m - __builtin_popcountll(lens);
        nulls[3] += m - __builtin_popcountll(tables);
        if (row & ~(codes & lens & tables) & all) return fail(RowsStatus::kNullChild);
        // the rows' offsets, lengths and tables without a branch a row
        bool decrease = false, filled = false, too_long = false, other_table = false,
             misfit = false;
        for (int k = 0; k < m; ++k) {
            const int64_t i = i0 + k;
            const int64_t lo = co[i], hi = co[i + 1];
            const uint64_t valid = (row >> k) & 1;
            decrease |= hi < lo;
            filled |= (hi != lo) & !valid;
            // unsigned: offsets that decrease (refused below) may lie anywhere
            if (kRebase) co_out[i + 1] = int64_t(uint64_t(hi) - uint64_t(base));
            const uint64_t v = lengths[i];
            if (sizeof(Length) == 8) too_long |= bool((v >> 62) & valid);
            len_out[i] = int64_t(v & (uint64_t(0) - valid));
            // a code yields 1-8 bytes, an escape 1 byte from 2 codes (null rows: 0 and 0);
            // the products wrap only for lengths refused above or offsets refused below
            const uint64_t c = uint64_t(hi) - uint64_t(lo), len = v & (uint64_t(0) - valid);
            misfit |= (c > 2 * len) | (len > 8 * c);
            other_table |= bool((int64_t(index[i]) != run_index) & valid);
        }
        if (decrease) return fail(RowsStatus::kOffsets);
        if (filled) return fail(RowsStatus::kFilledNull);
        if (too_long) return fail(RowsStatus::kLength);
        if (misfit) return fail(RowsStatus::kMisfit);
        if (!other_table) continue;
        for (int k = 0; k < m; ++k) {  // a run starts in this word: row by row
            if (!((row >> k) & 1) || int64_t(index[i0 + k]) == run_index) continue;
            const int64_t j = index[i0 + k];
            const int32_t t = j < ntable_of ? table_of[j] : -1;
            if (t < 0) return fail(RowsStatus::kTable);
            run_index = j;
            if (t != current) {
                if (current >= 0) found.run_starts.push_back(i0 + k);
                found.run_tables.push_back(t);
                current = t;
            }
        }
    }
    if (found.run_tables.empty()) found.run_tables.push_back(0);  // no valid row: one run
    found.run_starts.push_back(n);
    for (int k = 0; k < 4; ++k) found.nulls[k] = nulls[k];
    return found;
}

}  // namespace

RowsFound stored_rows(const StoredRows& in, int64_t* co_out, int64_t* len_out) {
    if (in.lengths64) {
        return co_out ? rows_of<uint64_t, true>(in, in.lengths64, co_out, len_out)
                      : rows_of<uint64_t, false>(in, in.lengths64, co_out, len_out);
    }
    return co_out ? rows_of<uint32_t, true>(in, in.lengths32, co_out, len_out)
                  : rows_of<uint32_t, false>(in, in.lengths32, co_out, len_out);
}

}  // namespace fsstgpu_native
