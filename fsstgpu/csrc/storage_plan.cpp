// stored_plan (storage_plan.h): stored_rows, then one pass over the lengths for the split rows.
#include "storage_plan.h"

#include <algorithm>

namespace fsstgpu_native {

StoredPlan stored_plan(const StoredRows& in, int64_t split_size, int64_t* code_offsets_out,
                       int64_t* lengths_out) {
    StoredPlan plan;
    plan.rows = stored_rows(in, code_offsets_out, lengths_out);
    if (plan.rows.status != RowsStatus::kOk) return plan;
    const int64_t n = in.n;
    // from 0 either way: stored_rows rebases into code_offsets_out when it is given
    const int64_t* co = code_offsets_out ? code_offsets_out : in.code_offsets;
    const int64_t* lens = lengths_out;
    const int64_t ncodes = co[n];
    // every length fits its codes (stored_rows: at most 8 bytes a code), so no sum overflows
    int64_t total = 0;
    for (int64_t i = 0; i < n; ++i) total += lens[i];
    plan.total = total;
    const std::vector<int64_t>& runs = plan.rows.run_starts;  // 0, ..., n
    const int64_t nblocks = static_cast<int64_t>(runs.size()) - 1;
    plan.block_out.assign(runs.size(), 0);
    std::vector<int64_t> row, code, out, row2, code2, out2;
    row.reserve(runs.size());
    code.reserve(runs.size());
    out.reserve(runs.size());
    size_t k = 0;
    int64_t pos = 0;
    int64_t above = split_size;  // the first multiple of split_size past pos (a division only
                                 // when pos reaches it: a division a row cost ~10 cycles a row)
    for (int64_t i = 0; i <= n; ++i) {
        for (; k < runs.size() && runs[k] == i; ++k) {  // rule 1: a run's first string
            plan.block_out[k] = pos;
            if (static_cast<int64_t>(k) < nblocks) {
                row.push_back(i);
                code.push_back(co[i]);
                out.push_back(pos);
            }
        }
        if (i == n) break;
        // rule 2: string i + 1 is the first at or after a multiple t < total when one lies in
        // (pos, min(next, total - 1)] (splits.rule2_rows' strings branch)
        const int64_t next = pos + lens[i];
        if (above <= std::min(next, total - 1)) {
            row2.push_back(i + 1);
            code2.push_back(co[i + 1]);
            out2.push_back(next);
        }
        pos = next;
        if (pos >= above) above = (pos / split_size + 1) * split_size;
    }
    if (ncodes == 0) {  // plan_splits' answer for no codes: no split
        plan.splits.codes = {0};
        plan.splits.out = {0};
        return plan;
    }
    row.insert(row.end(), row2.begin(), row2.end());
    code.insert(code.end(), code2.begin(), code2.end());
    out.insert(out.end(), out2.begin(), out2.end());
    const int64_t nrow = static_cast<int64_t>(row.size());
    plan.splits = assemble_splits(runs.data(), nblocks, row.data(), nrow, code.data(), out.data(),
                                  nrow, false, nullptr, nullptr, nullptr, 0, ncodes, total, 1);
    return plan;
}

}  // namespace fsstgpu_native
