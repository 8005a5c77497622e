// The codes walk of scan.h. One serial walker (run) steps a State; the parallel walk starts it
// in several chunks at states the serial walk is known to pass through if nothing before them
// is corrupt, and takes the chunks' results in order: the first error is the serial walk's.
//
// Chunk starts: with code offsets (kCheck, kLengths, kLong), at string starts (the output
// position there is the lengths' prefix sum, the next split the first past the string's code
// offset). Without them (kOffsets), at the split points: split k claims that code sc[k] is a
// boundary at output so[k]; the chunk before stops at the first boundary at or past sc[k] and
// must arrive exactly there, in the same string, or the rest is walked serially from where it
// stopped.
#include "scan.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include "errors.h"
#include "parallel.h"

namespace fsstgpu_native {

namespace {

constexpr int64_t kNoStop = std::numeric_limits<int64_t>::max();

enum Status {
    kOk, kBadCode, kEscapeAtEnd, kLength, kRange, kOvershoot, kShort, kTrailing, kSplit,
    kStopped,  // reached the chunk's stop code (not an error)
};

struct Result {
    Status status = kOk;
    int64_t index = 0;
};

// numba's int64 arithmetic wraps (corrupt lengths may overflow); C++'s signed overflow is UB
inline int64_t add(int64_t a, int64_t b) { return int64_t(uint64_t(a) + uint64_t(b)); }

struct State {
    int64_t i = 0;  // current string
    int64_t b = 0;  // its block
    int64_t c = 0;  // code position
    int64_t e = 0;  // end of string i's codes
    int64_t o = 0;  // output position of string i's start
    int64_t need = 0, produced = 0, next_cut = 0;
    int64_t k = 0;      // next split start to meet
    bool mid = false;   // inside string i: set up, at a code boundary
};

[[noreturn]] void fail(Result r) {
    static const char* const what[] = {
        "",
        ": a code has no symbol in its block's table",
        ": its codes end in an escape without its literal byte",
        ": its codes decode to a different length than the stored one",
        ": code offsets run past the codes or backwards",
        ": a symbol crosses the end of the string (stored length too short)",
        ": the codes run out before the stored length is reached",
    };
    const std::string i = std::to_string(r.index);
    if (r.status == kTrailing) throw CorruptData("codes left over after the last string");
    if (r.status == kSplit) {
        throw CorruptData("split " + i + " does not start on a code boundary at its output "
                          "position");
    }
    throw CorruptData("string " + i + what[r.status]);
}

// The serial walk (fsstgpu/scan.py's) from state s through the strings before i_end, stopping
// early (kStopped) at the first code boundary at or past stop_code, after its split checks.
template <int Mode>
Result run(const WalkInput& in, State& s, int64_t i_end, int64_t stop_code, int64_t cap,
           WalkCuts& cuts) {
    const int64_t nsplit = in.nsplits, cut_size = in.cut_size;
    const int64_t* sc = in.split_codes;
    const int64_t* so = in.split_out;
    int64_t i = s.i, b = s.b, c = s.c, e = s.e, o = s.o, need = s.need, produced = s.produced,
            next_cut = s.next_cut, k = s.k;
    bool mid = s.mid;
    Result r;
    for (;;) {
        if (!mid) {
            if (i >= i_end) break;
            while (i >= in.block_starts[b + 1]) ++b;
            if (Mode != kOffsets) {
                c = in.code_offsets[i];
                e = in.code_offsets[i + 1];
                if (c < 0 || e < c || e > in.ncodes) {
                    r = {kRange, i};
                    goto done;
                }
            } else {
                in.offsets_out[i] = c;
                e = in.ncodes;
            }
            need = Mode != kLengths ? in.lengths[i] : -1;
            if (Mode == kLong && need <= cut_size) {
                o = add(o, need);
                ++i;
                continue;
            }
            produced = 0;
            next_cut = 0 < cut_size && cut_size < need ? cut_size : add(need, 1);
            mid = true;
        }
        {
            const uint8_t* symlen = in.symlen + b * 256;
            // where a split check or the stop is due: one compare per code on the fast path
            int64_t event = std::min(k < nsplit ? sc[k] : kNoStop, stop_code);
            // no cut can fall in this string (the usual case): step on with fewer checks while
            // no split or stop is due and a code and its literal byte lie inside the string
            const bool no_cut = next_cut > need;
            for (;;) {  // at a code boundary
                if (no_cut) {
                    const int64_t lim = std::min(event, e - 1);
                    while (c < lim && (Mode != kOffsets || produced < need)) {
                        const uint8_t code = in.codes[c];
                        if (code == 255) {
                            produced += 1;
                            c += 2;
                            continue;
                        }
                        const int64_t len = symlen[code];
                        if (len == 0) {
                            r = {kBadCode, i};
                            goto done;
                        }
                        produced += len;
                        c += 1;
                        if (Mode == kOffsets && produced > need) {
                            r = {kOvershoot, i};
                            goto done;
                        }
                    }
                }
                if (c >= event) {
                    while (k < nsplit && sc[k] <= c) {
                        if (sc[k] < c || so[k] != add(o, produced)) {
                            r = {kSplit, k};
                            goto done;
                        }
                        ++k;
                    }
                    if (c >= stop_code) {
                        r = {kStopped, 0};
                        goto done;
                    }
                    event = std::min(k < nsplit ? sc[k] : kNoStop, stop_code);
                }
                if (produced >= next_cut && produced < need) {
                    if (int64_t(cuts.code.size()) >= cap) {
                        r = {kShort, i};
                        goto done;
                    }
                    cuts.code.push_back(c);
                    cuts.out.push_back(add(o, produced));
                    cuts.row.push_back(i);
                    while (next_cut <= produced) next_cut = add(next_cut, cut_size);
                }
                if (Mode == kOffsets) {
                    if (produced == need) break;
                } else if (c >= e) {
                    break;
                }
                if (c >= e) {
                    r = {kShort, i};
                    goto done;
                }
                const uint8_t code = in.codes[c];
                if (code == 255) {
                    if (c + 1 >= e) {
                        r = {kEscapeAtEnd, i};
                        goto done;
                    }
                    produced += 1;
                    c += 2;
                } else {
                    const int64_t len = symlen[code];
                    if (len == 0) {
                        r = {kBadCode, i};
                        goto done;
                    }
                    produced += len;
                    c += 1;
                }
                if (Mode == kOffsets && produced > need) {
                    r = {kOvershoot, i};
                    goto done;
                }
            }
        }
        if (Mode == kLengths) {
            in.lengths_out[i] = produced;
        } else if (produced != need) {
            r = {kLength, i};
            goto done;
        }
        o = add(o, produced);
        ++i;
        mid = false;
    }
    if (i_end < in.n) {
        r = {kStopped, 0};  // the chunk's last string done
    } else {
        // Splits left at the walk's end start there: a column with strings met them inside its
        // last string, but an empty column has no string to meet its (empty) splits in, and a
        // blob may hold such splits (formats/blob.md: a reader takes any valid split points).
        // kLong skips short strings without advancing c, so its end is no code boundary.
        while (Mode != kLong && k < nsplit && sc[k] == c && so[k] == o) ++k;
        if (k < nsplit) {
            r = {kSplit, k};
        } else if (Mode == kOffsets) {
            in.offsets_out[in.n] = c;
            if (c != in.ncodes) r = {kTrailing, 0};
        }
    }
done:
    s = State{i, b, c, e, o, need, produced, next_cut, k, mid};
    return r;
}

int64_t block_of(const WalkInput& in, int64_t i) {
    return std::upper_bound(in.block_starts, in.block_starts + in.nblocks + 1, i) -
           in.block_starts - 1;
}

bool sorted(const int64_t* a, int64_t n) {
    for (int64_t j = 0; j + 1 < n; ++j) {
        if (a[j + 1] < a[j]) return false;
    }
    return true;
}

// Takes the chunks' cuts in order as the serial walk would have them: the cut that overflows the
// cap fails. Joined at the end one array at a time, each chunk's array freed once copied, so the
// cuts are held about 1.3 times at the peak, not 2 (split_size=1 cuts nearly every code, 24
// bytes a cut).
struct Merge {
    int64_t cap;
    std::vector<WalkCuts*> taken;
    int64_t count = 0;
    void take(WalkCuts& part, Result r) {
        const int64_t room = cap - count;
        if (int64_t(part.code.size()) > room) fail({kShort, part.row[size_t(room)]});
        count += int64_t(part.code.size());
        taken.push_back(&part);
        if (r.status != kOk && r.status != kStopped) fail(r);
    }
    WalkCuts joined() {
        WalkCuts out;
        for (std::vector<int64_t> WalkCuts::*field : {&WalkCuts::code, &WalkCuts::out,
                                                      &WalkCuts::row}) {
            std::vector<int64_t>& to = out.*field;
            to.reserve(size_t(count));
            for (WalkCuts* part : taken) {
                std::vector<int64_t>& from = part->*field;
                to.insert(to.end(), from.begin(), from.end());
                std::vector<int64_t>().swap(from);
            }
        }
        return out;
    }
};

// Chunk starts at strings, for walks with code offsets.
std::vector<State> string_starts(const WalkInput& in, int64_t ntasks, int threads) {
    std::vector<int64_t> first{0};
    const int64_t* co = in.code_offsets;
    for (int64_t t = 1; t < ntasks; ++t) {
        const int64_t target = int64_t((__int128)in.ncodes * t / ntasks);
        const int64_t i = std::lower_bound(co, co + in.n + 1, target) - co;  // any i is safe
        if (i > first.back() && i < in.n) first.push_back(i);
    }
    std::vector<State> starts(first.size());
    // (kLengths has no lengths, and needs no output positions: no splits, no cuts)
    const bool need_out = in.lengths && (in.nsplits > 0 || in.cut_size > 0);
    std::vector<int64_t> sums(first.size(), 0);
    if (need_out) {  // output positions at the chunk starts: the lengths' prefix sums
        parallel_for(int64_t(first.size()) - 1, threads, [&](int64_t t) {
            int64_t sum = 0;
            for (int64_t i = first[t]; i < first[t + 1]; ++i) sum = add(sum, in.lengths[i]);
            sums[t + 1] = sum;
        });
    }
    int64_t o = 0;
    for (size_t t = 0; t < first.size(); ++t) {
        o = add(o, sums[t]);
        State& s = starts[t];
        s.i = first[t];
        s.b = block_of(in, s.i);
        s.o = o;
        // the previous chunk ends at co[i] having met every split start up to it
        if (t > 0 && in.nsplits > 0) {
            s.k = std::upper_bound(in.split_codes, in.split_codes + in.nsplits, co[s.i]) -
                  in.split_codes;
        }
    }
    return starts;
}

// Chunk starts at split points, for kOffsets (the split codes and outputs sorted). The lengths'
// prefix sums are put in offsets_out first (the walk overwrites them); false: no parallel walk
// (the lengths cannot be the codes').
bool split_starts(const WalkInput& in, int64_t ntasks, int threads, std::vector<State>& starts,
                  std::vector<int64_t>& stops) {
    const int64_t n = in.n, limit = 8 * in.ncodes;
    int64_t* prefix = in.offsets_out;
    const int64_t nchunks = std::min(n, ntasks);
    std::vector<int64_t> sums(size_t(nchunks + 1), 0);
    std::vector<char> bad(size_t(nchunks), 0);
    auto lo = [&](int64_t t) { return int64_t((__int128)n * t / nchunks); };
    parallel_for(nchunks, threads, [&](int64_t t) {
        int64_t sum = 0;
        const int64_t end = lo(t + 1);  // (in a loop test: a 128-bit division a string)
        for (int64_t i = lo(t); i < end; ++i) {
            const int64_t v = in.lengths[i];
            if (v < 0 || v > limit - sum) {
                bad[t] = 1;
                return;
            }
            sum += v;
        }
        sums[t + 1] = sum;
    });
    for (int64_t t = 0; t < nchunks; ++t) {
        if (bad[t] || sums[t + 1] > limit - sums[t]) return false;
        sums[t + 1] += sums[t];
    }
    parallel_for(nchunks, threads, [&](int64_t t) {
        int64_t sum = sums[t];
        const int64_t end = lo(t + 1);  // (the stores may alias n: recomputed each string)
        for (int64_t i = lo(t); i < end; ++i) {
            prefix[i] = sum;
            sum += in.lengths[i];
        }
    });
    prefix[n] = sums[nchunks];
    starts.assign(1, State{});
    starts[0].b = block_of(in, 0);
    const int64_t* sc = in.split_codes;
    for (int64_t t = 1; t < ntasks; ++t) {
        const int64_t target = int64_t((__int128)in.ncodes * t / ntasks);
        const int64_t k = std::lower_bound(sc, sc + in.nsplits, target) - sc;
        if (k >= in.nsplits || sc[k] <= starts.back().c) continue;
        const int64_t p = in.split_out[k];
        const int64_t j = std::lower_bound(prefix, prefix + n + 1, p) - prefix;
        State s;
        s.c = sc[k];
        s.k = k;  // the first split at sc[k]: checked again, as the chunk before checked it
        if (j <= n && prefix[j] == p) {  // at string j's start
            if (j == n) continue;
            s.i = j;
            s.o = p;
        } else {  // inside string j - 1 (j > n: past the end)
            if (j == 0 || j > n) continue;
            s.i = j - 1;
            s.need = in.lengths[s.i];
            if (in.cut_size > 0 && in.cut_size < s.need) continue;  // its next cut is unknown
            s.o = prefix[s.i];
            s.produced = p - s.o;
            s.e = in.ncodes;
            s.next_cut = add(s.need, 1);
            s.mid = true;
        }
        s.b = block_of(in, s.i);
        starts.push_back(s);
    }
    stops.assign(starts.size(), kNoStop);
    for (size_t t = 0; t + 1 < starts.size(); ++t) stops[t] = starts[t + 1].c;
    return true;
}

// Whether a chunk stopped where the next one starts (the serial walk's state there).
bool meets(const State& a, const State& next) {
    if (a.c != next.c || add(a.o, a.produced) != add(next.o, next.produced)) return false;
    return next.mid ? a.i == next.i && a.produced == next.produced
                    : a.i + 1 == next.i && a.produced == a.need;
}

template <int Mode>
WalkCuts walk_mode(const WalkInput& in, int threads) {
    Merge merge{in.cut_size > 0 ? std::max<int64_t>(in.max_cuts, 0) : 0, {}};
    const int64_t ntasks = std::min<int64_t>(in.ncodes / kTaskCodes, 64 * int64_t(threads));
    std::vector<State> starts;
    std::vector<int64_t> stops;
    bool parallel = threads > 1 && in.ncodes >= kParallelCodes && in.n > 1;
    if (parallel && Mode == kOffsets) {
        parallel = in.nsplits > 0 && sorted(in.split_codes, in.nsplits) &&
                   sorted(in.split_out, in.nsplits) &&
                   split_starts(in, ntasks, threads, starts, stops);
    } else if (parallel) {
        // split checks need the output position at a chunk start: kLengths and kLong do not
        // know it there
        parallel = in.nsplits == 0 || (Mode == kCheck && sorted(in.split_codes, in.nsplits));
        if (parallel) starts = string_starts(in, ntasks, threads);
    }
    if (!parallel || starts.size() < 2) {
        State s;
        s.b = block_of(in, 0);
        WalkCuts cuts;
        const Result r = run<Mode>(in, s, in.n, kNoStop, merge.cap, cuts);
        if (r.status != kOk) fail(r);
        return cuts;
    }
    const size_t nchunks = starts.size();
    std::vector<State> ends(starts);
    std::vector<Result> results(nchunks);
    std::vector<WalkCuts> parts(nchunks);
    if (Mode != kOffsets && in.cut_size > 0 && in.lengths) {
        // Each chunk's room for its cuts, taken here on the calling thread: at most one a code
        // and one per cut_size output bytes. A worker's own allocations stay in its arena once
        // freed, where the splits planned next on this thread cannot reuse them (RSS 1.2x the
        // cuts, split_size=1 on two threads); room past the cuts made is never touched. All
        // together no more than the cap (forged offsets and lengths bound nothing); a chunk
        // that outgrows its room grows as before.
        // (saturated: a caller's cap near 2**63 must not overflow)
        int64_t budget = merge.cap > INT64_MAX - int64_t(nchunks) ? INT64_MAX
                                                                 : merge.cap + int64_t(nchunks);
        for (size_t t = 0; t < nchunks && budget > 0; ++t) {
            const bool last = t + 1 == nchunks;
            const int64_t i0 = starts[t].i, i1 = last ? in.n : starts[t + 1].i;
            int64_t out = 0;
            if (last) {
                for (int64_t i = i0; i < i1; ++i) out = add(out, in.lengths[i]);
            } else {
                out = starts[t + 1].o - starts[t].o;
            }
            const int64_t codes = in.code_offsets[i1] - in.code_offsets[i0];
            const int64_t room =
                std::max<int64_t>(0, std::min({codes, out / in.cut_size, budget - 1}) + 1);
            budget -= room;
            parts[t].code.reserve(size_t(room));
            parts[t].out.reserve(size_t(room));
            parts[t].row.reserve(size_t(room));
        }
    }
    parallel_for(int64_t(nchunks), threads, [&](int64_t t) {
        const bool last = size_t(t) + 1 == nchunks;
        // kOffsets: a chunk walks no string the next one writes (one started from a wrong
        // guess of the strings at its split point would otherwise write offsets_out[i] for
        // strings the chunk before also writes); one that gets there first stops (kStopped)
        // and the merge walks on from there serially, as for any wrong guess
        const int64_t i_end = last ? in.n
                              : Mode == kOffsets ? starts[t + 1].i + (starts[t + 1].mid ? 1 : 0)
                                                 : starts[t + 1].i;
        const int64_t stop = Mode == kOffsets ? stops[t] : kNoStop;
        results[t] = run<Mode>(in, ends[t], i_end, stop, merge.cap, parts[t]);
    });
    for (size_t t = 0; t < nchunks; ++t) {
        Result r = results[t];
        if (Mode == kOffsets && r.status == kStopped && !meets(ends[t], starts[t + 1])) {
            // the chunk after started from a wrong guess: walk on from here, serially
            r = run<Mode>(in, ends[t], in.n, kNoStop, merge.cap, parts[t]);
            merge.take(parts[t], r);
            break;
        }
        merge.take(parts[t], r);
        if (r.status == kOk) break;  // the end (every chunk but the last stops or fails)
    }
    return merge.joined();
}

}  // namespace

WalkCuts walk_codes(const WalkInput& in, int threads) {
    if (in.n < 0 || in.ncodes < 0 || in.nsplits < 0 || in.nblocks < 0) {
        throw std::invalid_argument("negative sizes");
    }
    const int64_t* bs = in.block_starts;
    if (bs[0] != 0 || bs[in.nblocks] != in.n || !sorted(bs, in.nblocks + 1)) {
        throw std::invalid_argument("block_starts must run from 0 to n, non-decreasing");
    }
    switch (in.mode) {
        case kCheck: return walk_mode<kCheck>(in, threads);
        case kOffsets: return walk_mode<kOffsets>(in, threads);
        case kLengths: return walk_mode<kLengths>(in, threads);
        case kLong: return walk_mode<kLong>(in, threads);
        default: throw std::invalid_argument("mode must be CHECK, OFFSETS, LENGTHS or LONG");
    }
}

}  // namespace fsstgpu_native
