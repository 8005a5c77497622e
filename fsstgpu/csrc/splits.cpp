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

// A cut's block, as blocks_of gives it, one cut after the other: a pointer walk while the rows do
// not decrease (the usual case), else a binary search. The cuts are read in place: copying each
// into a Start and a block index (40 bytes beside the cuts' own 24) held the cuts 1.7 times more
// at split_size=1, where nearly every code is a cut.
struct CutBlocks {
    const int64_t* bs;
    int64_t nb;
    bool bs_sorted;
    int64_t p = 0, last = INT64_MIN;  // bs[0:p] <= last
    int64_t operator()(int64_t r) {
        if (bs_sorted && r >= last) {
            while (p <= nb && bs[p] <= r) ++p;
        } else {
            p = std::upper_bound(bs, bs + nb + 1, r) - bs;
        }
        last = r;
        return p - 1;
    }
};

struct Cuts {
    const int64_t *code, *out, *row;
    Start at(int64_t j, CutBlocks& blocks) const {
        return Start{code[j], row[j], blocks(row[j]), out[j]};
    }
};

// The plan written in place: n starts so far.
struct Plan {
    int64_t *codes, *out;
    uint16_t* table;
    int64_t n = 0;
};

// The last of equal code positions kept, positions at or past ncodes dropped.
void keep(Plan& plan, const Start& s, int64_t ncodes) {
    if (s.code >= ncodes) return;
    if (plan.n && plan.codes[plan.n - 1] == s.code) {
        plan.out[plan.n - 1] = s.out;
        plan.table[plan.n - 1] = static_cast<uint16_t>(s.block);
        return;
    }
    plan.codes[plan.n] = s.code;
    plan.out[plan.n] = s.out;
    plan.table[plan.n] = static_cast<uint16_t>(s.block);
    ++plan.n;
}

}  // namespace

SplitStarts assemble_splits(const int64_t* block_starts, int64_t nblocks, const int64_t* row,
                            int64_t nrow, const int64_t* code, const int64_t* out,
                            int64_t nvalues, bool by_row, const int64_t* cut_code,
                            const int64_t* cut_out, const int64_t* cut_row, int64_t ncut,
                            int64_t ncodes, int64_t total, int threads) {
    const size_t most = static_cast<size_t>(std::max<int64_t>(nrow + ncut, 0));
    SplitStarts plan;
    plan.codes.resize(most + 1);
    plan.out.resize(most + 1);
    plan.table.resize(most);
    const int64_t n = assemble_splits_into(block_starts, nblocks, row, nrow, code, out, nvalues,
                                           by_row, cut_code, cut_out, cut_row, ncut, ncodes,
                                           total, threads, plan.codes.data(), plan.out.data(),
                                           plan.table.data());
    plan.codes.resize(static_cast<size_t>(n + 1));
    plan.out.resize(static_cast<size_t>(n + 1));
    plan.table.resize(static_cast<size_t>(n));
    return plan;
}

int64_t assemble_splits_into(const int64_t* block_starts, int64_t nblocks, const int64_t* row,
                             int64_t nrow, const int64_t* code, const int64_t* out,
                             int64_t nvalues, bool by_row, const int64_t* cut_code,
                             const int64_t* cut_out, const int64_t* cut_row, int64_t ncut,
                             int64_t ncodes, int64_t total, int threads, int64_t* plan_codes,
                             int64_t* plan_out, uint16_t* plan_table) {
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
    // the runs: blocks' starts, rule 2's rows (one a string at most), then the cuts in place
    std::vector<Start> runs[2];
    runs[0].resize(static_cast<size_t>(nblocks));
    runs[1].resize(static_cast<size_t>(nrow - nblocks));
    std::vector<int64_t> block(static_cast<size_t>(nrow - nblocks));
    blocks_of(block_starts, nblocks, row + nblocks, nrow - nblocks, block.data());
    // the rows' positions, read in parallel: with by_row each is a cache miss (rule 2's rows lie
    // 4 KB of output apart), which bounded the whole step on one core
    constexpr int64_t kRows = kSplitRowsPerTask;
    parallel_for((nrow + kRows - 1) / kRows, threads, [&](int64_t t) {
        for (int64_t i = t * kRows; i < std::min(nrow, (t + 1) * kRows); ++i) {
            const int64_t r = row[i], at = by_row ? r : i;
            const bool first = i < nblocks;
            runs[first ? 0 : 1][static_cast<size_t>(first ? i : i - nblocks)] = Start{
                code[at], r, first ? i : block[static_cast<size_t>(i - nblocks)], out[at]};
        }
    });
    const Cuts cuts{cut_code, cut_out, cut_row};
    const bool bs_sorted = std::is_sorted(block_starts, block_starts + nblocks + 1);
    const auto cuts_sorted = [&] {
        CutBlocks blocks{block_starts, nblocks, bs_sorted};
        Start prev{};
        for (int64_t j = 0; j < ncut; ++j) {
            const Start s = cuts.at(j, blocks);
            if (j > 0 && s < prev) return false;
            prev = s;
        }
        return true;
    };
    Plan plan{plan_codes, plan_out, plan_table};
    const auto sorted = [](const std::vector<Start>& r) {
        return std::is_sorted(r.begin(), r.end());
    };
    if (sorted(runs[0]) && sorted(runs[1]) && cuts_sorted()) {
        CutBlocks blocks{block_starts, nblocks, bs_sorted};
        size_t at[2] = {0, 0};
        int64_t j = 0;
        Start cut = ncut ? cuts.at(0, blocks) : Start{};
        for (;;) {
            int best = -1;  // ties go to the earlier run, as a stable sort of run after run
            for (int r = 0; r < 2; ++r) {
                if (at[r] < runs[r].size() &&
                    (best < 0 || runs[r][at[r]] < runs[best][at[best]])) {
                    best = r;
                }
            }
            if (j < ncut && (best < 0 || cut < runs[best][at[best]])) {
                keep(plan, cut, ncodes);
                if (++j < ncut) cut = cuts.at(j, blocks);
                continue;
            }
            if (best < 0) break;
            keep(plan, runs[best][at[best]++], ncodes);
        }
    } else {
        std::vector<Start> all;
        all.reserve(static_cast<size_t>(nrow + ncut));
        for (const auto& r : runs) all.insert(all.end(), r.begin(), r.end());
        CutBlocks blocks{block_starts, nblocks, bs_sorted};
        for (int64_t j = 0; j < ncut; ++j) all.push_back(cuts.at(j, blocks));
        std::stable_sort(all.begin(), all.end());
        for (const Start& s : all) keep(plan, s, ncodes);
    }
    plan.codes[plan.n] = ncodes;
    plan.out[plan.n] = total;
    return plan.n;
}

}  // namespace fsstgpu_native
