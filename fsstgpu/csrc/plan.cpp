// Block planning (plan.h; the policy is documented in fsstgpu/blocks.py, plan_blocks): a walk
// over a column's segments with cheap probe tables, locating where the cost of the current
// table jumps, then one full training per block. Probes encode small random samples of
// segments; a located change encodes 4 KB pieces of a narrowed window with two tables.
#include "plan.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <tuple>
#include <utility>

#include "cpu.h"
#include "encode_lanes.h"
#include "kernels.h"
#include "matcher.h"
#include "parallel.h"

namespace fsstgpu_native {

namespace {

constexpr int64_t kProbeSample = 4 << 10;  // bytes of a segment's probe sample; the locate grain
constexpr int64_t kProbeTrain = 8 << 10;   // a probe table's training sample
constexpr int kRecheck = 16;               // segments between tries of a fresh table
constexpr int64_t kDriftBytes = 1 << 20;   // blocks shorter than this need a doubled cost
constexpr int64_t kSmallEncode = 16 << 10;  // encodes shorter than this: the chained loop
// locate's pieces: when there are kEstimateMin or more, each piece's cost is first estimated
// from every kEstimateStride-th of its strings, then the kRefine pieces on either side of the
// estimated switch are encoded whole and the switch placed among them
constexpr int64_t kEstimateMin = 8;
constexpr int64_t kEstimateStride = 4;
constexpr int64_t kRefine = 2;

// A probe table as the encoder kernels read it.
struct ProbeTable {
    Matcher matcher;
    LaneTable lanes;
    bool has_lanes = false;
    uint64_t id = 0;  // which table (a recycled one gets a new id)
};

// numpy.searchsorted(a[0:len], x, side="left" / "right")
inline int64_t search_left(const int64_t* a, int64_t len, int64_t x) {
    return std::lower_bound(a, a + len, x) - a;
}
inline int64_t search_right(const int64_t* a, int64_t len, int64_t x) {
    return std::upper_bound(a, a + len, x) - a;
}

// Where switching from the old table to the new one costs least: c_old[k], c_new[k] are piece
// k's code bytes with either table; total[k] takes the old table before piece k, the new one
// from piece k on. The sums run in numpy.cumsum's order (blocks.py's first version was NumPy,
// and the same sums keep its cuts).
struct Switch {
    int64_t at;   // the piece
    double best;  // total[at]
    double stay;  // the old table throughout
};
Switch switch_point(const std::vector<double>& c_old, const std::vector<double>& c_new) {
    const int64_t m = static_cast<int64_t>(c_old.size());
    std::vector<double> suffix(static_cast<size_t>(m + 1), 0.0);
    double acc = 0.0;
    for (int64_t k = m - 1; k >= 0; --k) {
        acc += c_new[k];
        suffix[k] = acc;
    }
    Switch out{0, 0.0, 0.0};
    double prefix = 0.0;
    bool first = true;
    for (int64_t k = 0; k < m; ++k) {
        const double total = prefix + suffix[k];
        if (first || total < out.best) {
            out.at = k;
            out.best = total;
            first = false;
        }
        prefix += c_old[k];
    }
    out.stay = prefix + 0.0;
    return out;
}

// The planner of one piece of a column (at most max_block_bytes, or the whole column): string
// i is data[off[i]:off[i + 1]], i < n.
class PiecePlanner {
public:
    PiecePlanner(const uint8_t* data, int64_t size, const int64_t* off, int64_t n,
                 const PlanOptions& opt)
        : data_(data), size_(size), off_(off), n_(n), opt_(opt),
          kern_(kernels(active_isa())), loop_(encode_loop()) {
        probe_opt_.extra_rounds = 0;  // the reference's five rounds: cheap
        // random draws, also from short ranges: the walk's cuts follow the probe tables
        // (evenly spread samples, train.h, cut /usr paths into 70 blocks instead of 79: -1.7%)
        probe_opt_.spread = false;
    }

    // The block starts (from 0, without the end) of the piece.
    std::vector<int64_t> walk();

private:
    using TablePtr = std::unique_ptr<ProbeTable>;

    // String indices from lo to hi about step bytes apart (lo, the first string at or after
    // each step mark, hi; no repeats).
    std::vector<int64_t> cut(int64_t lo, int64_t hi, int64_t step) const {
        std::vector<int64_t> out{lo};
        for (int64_t mark = off_[lo] + step; mark < off_[hi]; mark += step) {
            const int64_t at = std::lower_bound(off_ + out.back(), off_ + hi + 1, mark) - off_;
            if (at != out.back()) out.push_back(at);
        }
        if (out.back() != hi) out.push_back(hi);
        return out;
    }

    // Code bytes of strings lo:hi of d/o with t; codes_at_[i - lo] gets string i's start.
    int64_t encode(const uint8_t* d, int64_t dsize, const int64_t* o, int64_t lo, int64_t hi,
                   const ProbeTable& t) {
        const size_t room = static_cast<size_t>(2 * (o[hi] - o[lo]) + kEncodeSlack + 8);
        if (codes_.size() < room) codes_.resize(room);
        if (codes_at_.size() < static_cast<size_t>(hi - lo + 1)) codes_at_.resize(hi - lo + 1);
        // A probe's few KB go to the chained loop: the lane loops' setup and tails cost more
        // than they save on so few strings (dbtext column plan: ~5% less time), and the
        // kernel's own choice (kAuto) times loops only on spans of 128 KB and more.
        const int loop = loop_ == kAuto && o[hi] - o[lo] < kSmallEncode ? kChained : loop_;
        const int64_t end =
            kern_.encode(d, dsize, o + lo, 0, hi - lo, t.matcher, t.has_lanes ? &t.lanes : nullptr,
                         loop, codes_.data(), 0, codes_at_.data());
        codes_at_[hi - lo] = end;
        return end;
    }

    // Code bytes per byte of a 4 KB sample of strings lo:hi (all of them when fewer) drawn
    // with seed, encoded with t; 0 for no bytes. The walk and locate ask for the same probes
    // again (a segment's probe with the block's table before and after a recheck, with the old
    // and the fresh table in locate): the last sample and the last kCosts costs are kept.
    double probe(const ProbeTable& t, int64_t lo, int64_t hi, uint64_t seed) {
        const int64_t raw = off_[hi] - off_[lo];
        if (raw == 0) return 0.0;
        for (const ProbeCost& c : costs_) {
            if (c.table == t.id && c.lo == lo && c.hi == hi && c.seed == seed) return c.cost;
        }
        double cost;
        if (raw < kProbeSample) {
            cost = static_cast<double>(encode(data_, size_, off_, lo, hi, t)) /
                   static_cast<double>(raw);
        } else {
            if (sample_lo_ != lo || sample_hi_ != hi || sample_seed_ != seed) {
                sample_lo_ = -1;  // (if sample_into throws)
                // random draws also from a short range (not train.h's even sample): the
                // walk's costs, so its cuts, as the probe tables' are
                sample_bytes_ =
                    sample_into(data_, off_, lo, hi, kProbeSample, seed, sample_, false);
                sample_lo_ = lo;
                sample_hi_ = hi;
                sample_seed_ = seed;
            }
            const int64_t pieces = static_cast<int64_t>(sample_.offsets.size()) - 1;
            cost = static_cast<double>(encode(sample_.bytes.data(), sample_bytes_,
                                              sample_.offsets.data(), 0, pieces, t)) /
                   static_cast<double>(sample_bytes_);
        }
        costs_[next_cost_] = ProbeCost{t.id, lo, hi, seed, cost};
        next_cost_ = (next_cost_ + 1) % kCosts;
        return cost;
    }
    double probe_segment(const ProbeTable& t, int64_t s) {
        return probe(t, seg_[s], seg_[s + 1], kTrainSeed + static_cast<uint64_t>(s));
    }

    // A probe table trained on 8 KB of strings lo:hi (a table from the free list, if any).
    TablePtr probe_table(int64_t lo, int64_t hi) {
        const Symbols s = train_range(data_, off_, lo, hi, kProbeTrain, kTrainSeed, probe_opt_);
        TablePtr t;
        if (free_.empty()) {
            t = std::make_unique<ProbeTable>();
        } else {
            t = std::move(free_.back());
            free_.pop_back();
        }
        t->id = 0;  // (if build_matcher throws: a table no cost belongs to)
        build_matcher(t->matcher, s.values.data(), s.lengths.data(),
                      static_cast<int64_t>(s.values.size()));
        t->id = ++tables_made_;
        t->has_lanes = build_lane_table(t->lanes, t->matcher);
        return t;
    }
    void recycle(TablePtr& t) {
        if (t) free_.push_back(std::move(t));
    }

    // Code bytes per byte of pieces[k]:pieces[k + 1] with t, times the piece's bytes (1.0
    // per byte for an empty piece, so 0), from one encoding of them all.
    std::vector<double> piece_costs(const ProbeTable& t, const std::vector<int64_t>& pieces) {
        const int64_t lo = pieces.front();
        encode(data_, size_, off_, lo, pieces.back(), t);
        std::vector<double> out(pieces.size() - 1);
        for (size_t k = 0; k + 1 < pieces.size(); ++k) {
            const int64_t raw = off_[pieces[k + 1]] - off_[pieces[k]];
            const int64_t coded = codes_at_[pieces[k + 1] - lo] - codes_at_[pieces[k] - lo];
            const double cost = raw > 0 ? static_cast<double>(coded) / static_cast<double>(raw)
                                        : 1.0;
            out[k] = cost * static_cast<double>(raw);
        }
        return out;
    }

    // Every kEstimateStride-th string of each of pieces[k]:pieces[k + 1] (its first always),
    // copied into est_ (est_at_[k]: piece k's first string there), for estimated_costs.
    void gather_estimate(const std::vector<int64_t>& pieces) {
        est_.bytes.clear();
        est_.offsets.assign(1, 0);
        est_at_.assign(1, 0);
        for (size_t k = 0; k + 1 < pieces.size(); ++k) {
            for (int64_t i = pieces[k]; i < pieces[k + 1]; i += kEstimateStride) {
                est_.bytes.insert(est_.bytes.end(), data_ + off_[i], data_ + off_[i + 1]);
                est_.offsets.push_back(static_cast<int64_t>(est_.bytes.size()));
            }
            est_at_.push_back(static_cast<int64_t>(est_.offsets.size()) - 1);
        }
        est_size_ = static_cast<int64_t>(est_.bytes.size());
        est_.bytes.resize(est_.bytes.size() + 8, 0);  // (the slack samples have)
    }

    // piece_costs estimated from the strings gather_estimate took of the same pieces: each
    // piece's code bytes per byte there, times the piece's bytes (1.0 per byte when its
    // strings taken are empty).
    std::vector<double> estimated_costs(const ProbeTable& t, const std::vector<int64_t>& pieces) {
        const int64_t taken = static_cast<int64_t>(est_.offsets.size()) - 1;
        encode(est_.bytes.data(), est_size_, est_.offsets.data(), 0, taken, t);
        std::vector<double> out(pieces.size() - 1);
        for (size_t k = 0; k + 1 < pieces.size(); ++k) {
            const int64_t a = est_at_[k], b = est_at_[k + 1];
            const int64_t raw = est_.offsets[b] - est_.offsets[a];
            const double cost = raw > 0 ? static_cast<double>(codes_at_[b] - codes_at_[a]) /
                                              static_cast<double>(raw)
                                        : 1.0;
            out[k] = cost * static_cast<double>(off_[pieces[k + 1]] - off_[pieces[k]]);
        }
        return out;
    }

    // The probe table and baseline cost of a block starting at string lo (null table: no
    // bytes from lo on within reach).
    void start_block(int64_t lo) {
        recycle(table_);
        const int64_t hi = std::min(
            n_, std::max(lo + 1, search_left(off_, n_ + 1, off_[lo] + kProbeSample + kProbeTrain)));
        base_ = 0.0;
        if (off_[hi] == off_[lo]) return;
        // skip the first 4 KB: the located change point may be up to a piece early
        const int64_t lo_t = std::min(search_left(off_, n_ + 1, off_[lo] + kProbeSample), hi - 1);
        table_ = probe_table(lo_t, hi);
        const int64_t raw = off_[hi] - off_[lo_t];
        base_ = raw > 0 ? static_cast<double>(encode(data_, size_, off_, lo_t, hi, *table_)) /
                              static_cast<double>(raw)
                        : 1.0;
        // The cost on the training data itself is optimistic (a table fits its sample): take
        // the larger of it and the cost on the next segment's sample, unless that segment is
        // different enough data already.
        const int64_t s_next = search_left(seg_.data(), nseg_ + 1, hi);
        if (s_next < nseg_) {
            const double holdout = probe_segment(*table_, s_next);
            if (holdout <= base_ * (1.0 + opt_.tolerance)) base_ = std::max(base_, holdout);
        }
    }

    // Where in strings lo:hi switching from table old to fresh costs least; -1: nowhere.
    // A window of more than three segments is first narrowed with each segment's probe
    // sample; the switch is then placed to ~4 KB by encoding the pieces around the best
    // segment whole.
    int64_t locate(const ProbeTable& old, const ProbeTable& fresh, int64_t lo, int64_t hi) {
        const double keep = 1.0 - 0.5 * opt_.tolerance;
        const std::vector<int64_t> coarse = cut(lo, hi, opt_.segment_bytes);
        const bool narrowed = coarse.size() > 4;
        if (narrowed) {
            const size_t m = coarse.size() - 1;
            std::vector<double> c_old(m), c_new(m);
            for (size_t j = 0; j < m; ++j) {
                const uint64_t seed =
                    kTrainSeed + static_cast<uint64_t>(search_right(seg_.data(), nseg_ + 1,
                                                                    coarse[j]) - 1);
                const double raw = static_cast<double>(off_[coarse[j + 1]] - off_[coarse[j]]);
                c_old[j] = probe(old, coarse[j], coarse[j + 1], seed) * raw;
                c_new[j] = probe(fresh, coarse[j], coarse[j + 1], seed) * raw;
            }
            const Switch sw = switch_point(c_old, c_new);
            if (sw.best > sw.stay * keep) return -1;
            lo = coarse[static_cast<size_t>(std::max<int64_t>(sw.at - 1, 0))];
            hi = coarse[static_cast<size_t>(std::min<int64_t>(sw.at + 1, int64_t(m)))];
        }
        const std::vector<int64_t> pieces = cut(lo, hi, kProbeSample);
        const int64_t m = static_cast<int64_t>(pieces.size()) - 1;
        if (m < kEstimateMin) {
            const std::vector<double> c_old = piece_costs(old, pieces);
            const std::vector<double> c_new = piece_costs(fresh, pieces);
            const Switch sw = switch_point(c_old, c_new);
            if (!narrowed && sw.best > sw.stay * keep) return -1;
            return pieces[static_cast<size_t>(sw.at)];
        }
        // Encoding every piece whole with both tables was most of the walk's time on short
        // strings (/usr paths: twice the column's bytes, 20 MB for 10). A quarter of each
        // piece's strings places the switch within a piece or two: so the estimate, then the
        // pieces around it whole (/usr paths and dbtext: the same cuts as whole pieces gave;
        // stdlib and doc lines: some others, the ratio within 0.15%; BENCHMARKS.md).
        gather_estimate(pieces);
        const Switch sw = switch_point(estimated_costs(old, pieces),
                                       estimated_costs(fresh, pieces));
        if (!narrowed && sw.best > sw.stay * keep) return -1;
        // the switch among pieces a..b: total(k) - total(a) sums c_old - c_new over a..k - 1
        const int64_t a = std::max<int64_t>(sw.at - kRefine, 0);
        const int64_t b = std::min<int64_t>(sw.at + kRefine, m - 1);
        if (b == a) return pieces[static_cast<size_t>(a)];
        const std::vector<int64_t> near(pieces.begin() + a, pieces.begin() + b + 1);
        const std::vector<double> c_old = piece_costs(old, near);
        const std::vector<double> c_new = piece_costs(fresh, near);
        int64_t at = a;
        double sum = 0.0, best = 0.0;
        for (int64_t k = a + 1; k <= b; ++k) {
            sum += c_old[static_cast<size_t>(k - 1 - a)] - c_new[static_cast<size_t>(k - 1 - a)];
            if (sum < best) {
                best = sum;
                at = k;
            }
        }
        return pieces[static_cast<size_t>(at)];
    }

    const uint8_t* data_;
    int64_t size_;
    const int64_t* off_;
    int64_t n_;
    const PlanOptions& opt_;
    const Kernels& kern_;
    int loop_;
    TrainOptions probe_opt_;
    std::vector<int64_t> seg_;
    int64_t nseg_ = 0;
    TablePtr table_;  // the current block's probe table
    double base_ = 0.0;
    std::vector<TablePtr> free_;
    std::vector<uint8_t> codes_;
    std::vector<int64_t> codes_at_;
    // the last probe's sample (strings sample_lo_:sample_hi_, seed sample_seed_)
    Sample sample_;
    // locate's strings for estimates (gather_estimate)
    Sample est_;
    std::vector<int64_t> est_at_;
    int64_t est_size_ = 0;
    int64_t sample_bytes_ = 0, sample_lo_ = -1, sample_hi_ = -1;
    uint64_t sample_seed_ = 0;
    // the last kCosts probes' costs (table 0: none)
    struct ProbeCost {
        uint64_t table;
        int64_t lo, hi;
        uint64_t seed;
        double cost;
    };
    static constexpr int kCosts = 64;
    ProbeCost costs_[kCosts] = {};
    int next_cost_ = 0;
    uint64_t tables_made_ = 0;
};

std::vector<int64_t> PiecePlanner::walk() {
    seg_ = cut(0, n_, opt_.segment_bytes);
    nseg_ = static_cast<int64_t>(seg_.size()) - 1;
    std::vector<int64_t> starts{0};
    start_block(0);
    int64_t block_bytes = 0;
    TablePtr fresh;  // segment fresh_seg's own probe table
    int64_t fresh_seg = -1;
    for (int64_t s = 0; s < nseg_; ++s) {
        const int64_t lo_seg = seg_[s], hi_seg = seg_[s + 1];
        const int64_t seg_bytes = off_[hi_seg] - off_[lo_seg];
        if (lo_seg > starts.back() && seg_bytes) {
            int64_t at = -1;
            if (block_bytes + seg_bytes > opt_.max_block_bytes || !table_) {
                at = lo_seg;
            } else {
                const int64_t since = search_right(seg_.data(), nseg_ + 1, starts.back());
                // Drift (e.g. a sorted key) splits only blocks of kDriftBytes; a shorter
                // block needs a change that doubles the cost.
                const double tol = block_bytes >= kDriftBytes ? opt_.tolerance : 1.0;
                const bool worse = probe_segment(*table_, s) > base_ * (1.0 + tol);
                if (worse || (s - since) % kRecheck == kRecheck - 1) {
                    if (fresh_seg != s) {
                        recycle(fresh);
                        fresh = probe_table(lo_seg, hi_seg);
                        fresh_seg = s;
                    }
                    const int64_t nxt = std::min(s + 1, nseg_ - 1);
                    if (worse || probe_segment(*fresh, nxt) * (1.0 + tol) <
                                     probe_segment(*table_, nxt)) {
                        // never shorter than the probe table's training range
                        const int64_t first = search_left(
                            off_, n_ + 1, off_[starts.back()] + kProbeSample + kProbeTrain);
                        int64_t window = std::max(
                            {starts.back() + 1, first,
                             seg_[std::max<int64_t>(s - (worse ? 1 : kRecheck), 0)]});
                        if (window >= hi_seg) window = lo_seg;
                        at = locate(*table_, *fresh, window, hi_seg);
                        if (at < 0 && worse) at = lo_seg;
                    }
                }
            }
            if (at >= 0) {
                starts.push_back(at);
                start_block(at);
                block_bytes = off_[lo_seg] - off_[at];
            }
        }
        block_bytes += seg_bytes;
    }
    return starts;
}

Symbols train_block(const uint8_t* data, const int64_t* off, int64_t lo, int64_t hi,
                    const PlanOptions& opt) {
    if (off[hi] == off[lo]) return Symbols{};
    TrainOptions rounds;
    rounds.extra_rounds = opt.extra_rounds;
    return train_range(data, off, lo, hi, opt.sample_bytes, kTrainSeed, rounds);
}

// The block starts of a piece of at most max_block_bytes, then n: one block under two
// segments or without a walk, else the walk's.
std::vector<int64_t> block_starts_of(const uint8_t* data, int64_t size, const int64_t* off,
                                     int64_t n, const PlanOptions& opt) {
    const int64_t total = n ? off[n] - off[0] : 0;
    std::vector<int64_t> starts{0};
    if (opt.walk && total >= 2 * opt.segment_bytes) {
        starts = PiecePlanner(data, size, off, n, opt).walk();
    }
    starts.push_back(n);
    return starts;
}

// A column of at most max_block_bytes: the walk, then the blocks' trainings on `threads`.
Plan plan_piece(const uint8_t* data, int64_t size, const int64_t* off, int64_t n,
                const PlanOptions& opt, int threads) {
    Plan plan;
    const int64_t total = n ? off[n] - off[0] : 0;
    // Most columns stay one block, whose table is the whole column's: with a spare core it is
    // trained while the walk probes, and dropped if the column gets cut.
    const bool speculate = opt.speculate && opt.walk && threads > 1 &&
                           total >= 2 * opt.segment_bytes && !pool::inside_task();
    Symbols whole;
    parallel_for(speculate ? 2 : 1, threads, [&](int64_t k) {
        if (k == 0) {
            plan.block_starts = block_starts_of(data, size, off, n, opt);
        } else {
            whole = train_block(data, off, 0, n, opt);
        }
    });
    const int64_t nb = static_cast<int64_t>(plan.block_starts.size()) - 1;
    if (nb == 1 && speculate) {
        plan.tables.push_back(std::move(whole));
        return plan;
    }
    plan.tables.resize(static_cast<size_t>(nb));
    parallel_for(nb, threads, [&](int64_t b) {
        plan.tables[b] = train_block(data, off, plan.block_starts[b], plan.block_starts[b + 1], opt);
    });
    return plan;
}

// The pieces grid[k]:grid[k + 1] of a larger column. Their walks and their blocks' trainings
// are one pool of work: walks first (each is its piece's critical path), trainings as the
// walks hand them over, so that no core idles while the last walks run (17 pieces of 64 MB
// on 16 cores: a second round of walks on one core otherwise).
Plan plan_pieces(const uint8_t* data, int64_t size, const int64_t* off,
                 const std::vector<int64_t>& grid, const PlanOptions& opt, int threads) {
    const int64_t npieces = static_cast<int64_t>(grid.size()) - 1;
    std::vector<std::vector<int64_t>> starts(static_cast<size_t>(npieces));  // piece-relative
    std::vector<std::vector<Symbols>> tables(static_cast<size_t>(npieces));
    std::mutex mu;
    std::condition_variable wake;
    int64_t next_walk = 0, walks_done = 0;
    std::deque<std::pair<int64_t, int64_t>> trainings;  // (piece, block)
    std::exception_ptr error;
    auto worker = [&](int64_t) {
        std::unique_lock<std::mutex> lock(mu);
        while (!error) {
            if (next_walk < npieces || !trainings.empty()) {
                const bool walk = next_walk < npieces;
                int64_t k = 0, b = 0;
                if (walk) {
                    k = next_walk++;
                } else {
                    std::tie(k, b) = trainings.front();
                    trainings.pop_front();
                }
                lock.unlock();
                const int64_t lo = grid[k];
                std::vector<int64_t> found;
                try {
                    if (walk) {
                        found = block_starts_of(data, size, off + lo, grid[k + 1] - lo, opt);
                    } else {
                        const std::vector<int64_t>& s = starts[k];
                        tables[k][b] = train_block(data, off + lo, s[b], s[b + 1], opt);
                    }
                } catch (...) {
                    lock.lock();
                    if (!error) error = std::current_exception();
                    wake.notify_all();
                    return;
                }
                lock.lock();
                if (walk) {
                    const int64_t nb = static_cast<int64_t>(found.size()) - 1;
                    starts[k] = std::move(found);
                    tables[k].resize(static_cast<size_t>(nb));
                    for (int64_t j = 0; j < nb; ++j) trainings.emplace_back(k, j);
                    ++walks_done;
                    wake.notify_all();
                }
            } else if (walks_done == npieces) {
                return;
            } else {
                wake.wait(lock);  // a walk still running will hand over trainings
            }
        }
    };
    // a worker a thread, no more than the pool runs (a task each: threads = 2**31 - 1 was
    // 2**31 tasks, three minutes of locking one mutex)
    parallel_for(std::clamp(threads, 1, kMaxThreads), threads, worker);
    if (error) std::rethrow_exception(error);
    Plan plan;
    for (int64_t k = 0; k < npieces; ++k) {
        const std::vector<int64_t>& s = starts[static_cast<size_t>(k)];
        for (size_t b = 0; b + 1 < s.size(); ++b) {
            plan.block_starts.push_back(s[b] + grid[k]);
            plan.tables.push_back(std::move(tables[k][b]));
        }
    }
    plan.block_starts.push_back(grid.back());
    return plan;
}

}  // namespace

Plan plan_blocks(const uint8_t* data, int64_t size, const int64_t* off, int64_t n,
                 const PlanOptions& options, int threads) {
    PlanOptions opt = options;
    opt.segment_bytes = std::max<int64_t>(1, opt.segment_bytes);
    opt.max_block_bytes = std::max<int64_t>(1, opt.max_block_bytes);
    const int64_t total = n ? off[n] - off[0] : 0;
    if (total <= opt.max_block_bytes) return plan_piece(data, size, off, n, opt, threads);
    // Cut every max_block_bytes (a block ends there anyway) and plan the pieces on every core:
    // a fixed grid keeps the plan the same whatever the thread count.
    std::vector<int64_t> grid{0};
    for (int64_t mark = off[0] + opt.max_block_bytes; mark < off[n]; mark += opt.max_block_bytes) {
        const int64_t at = std::lower_bound(off + grid.back(), off + n + 1, mark) - off;
        if (at != grid.back()) grid.push_back(at);
    }
    if (grid.back() != n) grid.push_back(n);
    return plan_pieces(data, size, off, grid, opt, threads);
}

PackedTables pack_tables(const std::vector<Symbols>& tables, int threads) {
    PackedTables p;
    p.first.push_back(0);
    for (const Symbols& s : tables) {
        p.first.push_back(p.first.back() + static_cast<int64_t>(s.values.size()));
    }
    p.values.resize(static_cast<size_t>(p.first.back()));
    p.lengths.resize(static_cast<size_t>(p.first.back()));
    parallel_for(static_cast<int64_t>(tables.size()), threads, [&](int64_t t) {
        const Symbols& s = tables[static_cast<size_t>(t)];
        std::vector<std::pair<uint8_t, uint64_t>> order;  // (length, big-endian value)
        order.reserve(s.values.size());
        for (size_t i = 0; i < s.values.size(); ++i) {
            const int len = s.lengths[i];
            const uint64_t v =
                len >= 8 ? s.values[i] : s.values[i] & ((uint64_t{1} << (8 * len)) - 1);
            order.emplace_back(static_cast<uint8_t>(len), __builtin_bswap64(v));
        }
        std::sort(order.begin(), order.end());
        int64_t at = p.first[static_cast<size_t>(t)];
        for (const auto& [len, be] : order) {
            p.values[static_cast<size_t>(at)] = __builtin_bswap64(be);
            p.lengths[static_cast<size_t>(at++)] = len;
        }
    });
    return p;
}

}  // namespace fsstgpu_native
