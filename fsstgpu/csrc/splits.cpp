// The split starts merged (splits.h). A 1 GiB column has ~260 000 of them: NumPy's gathers,
// searchsorted, lexsort and masks took 26 ms on one core of a 16-core compress that takes 350 ms;
// the three runs are already sorted, so one merge does it.
#include "splits.h"

#include "parallel.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <tuple>

namespace fsstgpu_native {

namespace {

struct Start {
    int64_t code, row, block, out;
    bool operator<(const Start& o) const {
        return std::tie(code, row, block) < std::tie(o.code, o.row, o.block);
    }
};

// searchsorted(bs[0:nb + 1], r, "right") - 1 for each r of rows[0:n] into block[]: a pointer
// walk when both are sorted (binary searches missed the branch predictor at every step: 100 ns
// a row), else a binary search each, as NumPy's.
void blocks_of(const int64_t* bs, int64_t nb, const int64_t* rows, int64_t n, int64_t* block) {
    const bool walk = std::is_sorted(bs, bs + nb + 1) && std::is_sorted(rows, rows + n);
    int64_t p = 0;  // bs[0:p] <= r
    for (int64_t i = 0; i < n; ++i) {
        const int64_t r = rows[i];
        if (walk) {
            while (p <= nb && bs[p] <= r) ++p;
        } else {
            p = std::upper_bound(bs, bs + nb + 1, r) - bs;
        }
        block[i] = p - 1;
    }
}

// The last of equal code positions kept, positions at or past ncodes dropped.
void keep(SplitStarts& plan, const Start& s, int64_t ncodes) {
    if (s.code >= ncodes) return;
    if (!plan.codes.empty() && plan.codes.back() == s.code) {
        plan.out.back() = s.out;
        plan.table.back() = static_cast<uint16_t>(s.block);
        return;
    }
    plan.codes.push_back(s.code);
    plan.out.push_back(s.out);
    plan.table.push_back(static_cast<uint16_t>(s.block));
}

}  // namespace

SplitStarts assemble_splits(const int64_t* block_starts, int64_t nblocks, const int64_t* row,
                            int64_t nrow, const int64_t* code, const int64_t* out,
                            int64_t nvalues, bool by_row, const int64_t* cut_code,
                            const int64_t* cut_out, const int64_t* cut_row, int64_t ncut,
                            int64_t ncodes, int64_t total, int threads) {
    if (nblocks < 0 || nrow < nblocks || ncut < 0) {
        throw std::invalid_argument("rows must begin with the blocks' starts");
    }
    if (by_row) {
        for (int64_t i = 0; i < nrow; ++i) {
            if (row[i] < 0 || row[i] >= nvalues) {
                throw std::invalid_argument("row " + std::to_string(row[i]) + " is outside the " +
                                            std::to_string(nvalues) + " code offsets");
            }
        }
    }
    // the three runs: blocks' starts, rule 2's rows, cuts
    std::vector<Start> runs[3];
    runs[0].resize(static_cast<size_t>(nblocks));
    runs[1].resize(static_cast<size_t>(nrow - nblocks));
    runs[2].resize(static_cast<size_t>(ncut));
    std::vector<int64_t> block(static_cast<size_t>(std::max(nrow - nblocks, ncut)));
    blocks_of(block_starts, nblocks, row + nblocks, nrow - nblocks, block.data());
    // the rows' positions, read in parallel: with by_row each is a cache miss (rule 2's rows lie
    // 4 KB of output apart), which bounded the whole step on one core
    constexpr int64_t kRowsPerTask = 16 << 10;
    parallel_for((nrow + kRowsPerTask - 1) / kRowsPerTask, threads, [&](int64_t t) {
        for (int64_t i = t * kRowsPerTask; i < std::min(nrow, (t + 1) * kRowsPerTask); ++i) {
            const int64_t r = row[i], at = by_row ? r : i;
            const bool first = i < nblocks;
            runs[first ? 0 : 1][static_cast<size_t>(first ? i : i - nblocks)] = Start{
                code[at], r, first ? i : block[static_cast<size_t>(i - nblocks)], out[at]};
        }
    });
    blocks_of(block_starts, nblocks, cut_row, ncut, block.data());
    for (int64_t j = 0; j < ncut; ++j) {
        runs[2][static_cast<size_t>(j)] =
            Start{cut_code[j], cut_row[j], block[static_cast<size_t>(j)], cut_out[j]};
    }
    SplitStarts plan;
    plan.codes.reserve(static_cast<size_t>(nrow + ncut + 1));
    plan.out.reserve(static_cast<size_t>(nrow + ncut + 1));
    plan.table.reserve(static_cast<size_t>(nrow + ncut));
    const auto sorted = [](const std::vector<Start>& r) {
        return std::is_sorted(r.begin(), r.end());
    };
    if (std::all_of(runs, runs + 3, sorted)) {
        size_t at[3] = {0, 0, 0};
        for (;;) {
            int best = -1;  // ties go to the earlier run, as a stable sort of run after run
            for (int r = 0; r < 3; ++r) {
                if (at[r] < runs[r].size() &&
                    (best < 0 || runs[r][at[r]] < runs[best][at[best]])) {
                    best = r;
                }
            }
            if (best < 0) break;
            keep(plan, runs[best][at[best]++], ncodes);
        }
    } else {
        std::vector<Start> all;
        all.reserve(static_cast<size_t>(nrow + ncut));
        for (const auto& r : runs) all.insert(all.end(), r.begin(), r.end());
        std::stable_sort(all.begin(), all.end());
        for (const Start& s : all) keep(plan, s, ncodes);
    }
    plan.codes.push_back(ncodes);
    plan.out.push_back(total);
    return plan;
}

}  // namespace fsstgpu_native
