// The split plan's last step (fsstgpu/splits.py, assemble_splits): the split starts of rules 1
// to 3 merged in order, one per code position.
#pragma once

#include <cstdint>
#include <vector>

#include "parallel.h"

namespace fsstgpu_native {

// assemble_splits reads this many rows' positions a task (fewer rows: one thread)
constexpr int64_t kSplitRowsPerTask = (16 << 10) / kTaskSizeDivisor;

struct SplitStarts {
    std::vector<int64_t> codes, out;  // each start's code and output position, then ncodes / total
    std::vector<uint16_t> table;      // each split's block
};

// Rows row[0:nrow]: the first nblocks are the blocks' first strings (block k's start is row[k]),
// the rest rule 2's strings; each row's code and output position is code[i] / out[i], or with
// by_row code[row[i]] / out[row[i]] (code and out then hold nvalues entries; a row outside them
// is std::invalid_argument). Cuts: cut_code[j], cut_out[j] inside string cut_row[j]. A rule-2
// row or cut of string r belongs to block searchsorted(block_starts[0:nblocks + 1], r, "right")
// - 1 (block_starts non-decreasing; forged ones get a binary search's answer). Every start is ordered by (code, row, block) (ties keep rows before cuts, each in its
// given order); of several starts at one code position the last is kept, and starts at or past
// ncodes are dropped. Sorted inputs are merged; anything else is sorted (same result). The
// rows' positions are read on `threads`.
SplitStarts assemble_splits(const int64_t* block_starts, int64_t nblocks, const int64_t* row,
                            int64_t nrow, const int64_t* code, const int64_t* out,
                            int64_t nvalues, bool by_row, const int64_t* cut_code,
                            const int64_t* cut_out, const int64_t* cut_row, int64_t ncut,
                            int64_t ncodes, int64_t total, int threads);

// The same written into plan_codes / plan_out (nrow + ncut + 1 entries of room each) and
// plan_table (nrow + ncut): returns the number of splits n (codes and out then hold n + 1
// entries, ending at ncodes / total). The binding writes into the arrays it returns, trimmed
// after: no vectors copied at the end (split_size=1 makes a split a code, 18 bytes each).
int64_t assemble_splits_into(const int64_t* block_starts, int64_t nblocks, const int64_t* row,
                             int64_t nrow, const int64_t* code, const int64_t* out,
                             int64_t nvalues, bool by_row, const int64_t* cut_code,
                             const int64_t* cut_out, const int64_t* cut_row, int64_t ncut,
                             int64_t ncodes, int64_t total, int threads, int64_t* plan_codes,
                             int64_t* plan_out, uint16_t* plan_table);

}  // namespace fsstgpu_native
