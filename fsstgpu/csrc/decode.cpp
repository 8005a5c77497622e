// Decoding entry points: one range (decoder.py's decode_range) and a whole column from its
// split points (decoder.py's decode_all, decode.h), with decoder.py's checks and messages.
#include "decode.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "codec.h"
#include "decode_kernel.h"
#include "decode_utf8.h"
#include "decode_walk.h"
#include "errors.h"
#include "kernels.h"
#include "parallel.h"

namespace fsstgpu_native {

namespace {

constexpr int64_t kTaskBytes = 1 << 20;  // output bytes per parallel task
// Output bytes decoded between two UTF-8 checks of the strings they completed: still in the L2
// cache when the check reads them. (32 KB, in the L1 cache, ran 3% slower on dbtext: each
// check has its search for the strings completed and its calls.)
constexpr int64_t kUtf8Bytes = 128 << 10;

std::string range(int64_t a, int64_t b) { return std::to_string(a) + ".." + std::to_string(b); }

// Every length at most 8: the kernels store a symbol as one 8-byte word.
void check_lengths(const uint8_t* lens, int64_t ntables) {
    for (int64_t i = 0; i < ntables * 256; ++i) {
        if (lens[i] > 8) {
            throw std::invalid_argument("symbol length " + std::to_string(lens[i]) +
                                        " over 8 (table " + std::to_string(i / 256) +
                                        ", code " + std::to_string(i % 256) + ")");
        }
    }
}

}  // namespace

int64_t decode_one(const uint8_t* codes, int64_t ncodes, int64_t start, int64_t end,
                   const uint64_t* packed, const uint8_t* lens, uint8_t* out, int64_t nout,
                   int64_t out_pos, int64_t out_end) {
    if (!(0 <= start && start <= end && end <= ncodes)) {
        throw std::invalid_argument("code range " + range(start, end) + " outside " +
                                    range(0, ncodes));
    }
    if (!(0 <= out_pos && out_pos <= out_end && out_end <= nout)) {
        throw std::invalid_argument("output range " + range(out_pos, out_end) + " outside " +
                                    range(0, nout));
    }
    check_lengths(lens, 1);
    // decode_all's loop (decode_kernel.h), stores bounded by the range itself
    uint8_t literals = 0;
    return plain::decode_run<false>(codes, start, end, packed, lens, out, out_pos, out_end,
                                    out_end, literals);
}

namespace {

template <class T>
void check_split_points(const int64_t* sc, const int64_t* so, const T* st, int64_t nsplits,
                        int64_t nc, int64_t no, int64_t ncodes, int64_t total_out, int64_t nt) {
    if (total_out < 0) throw CorruptData("negative output size " + std::to_string(total_out));
    if (nc != nsplits + 1 || no != nsplits + 1) {
        throw CorruptData("split arrays disagree: " + std::to_string(nc) + " code starts, " +
                          std::to_string(no) + " output starts, " + std::to_string(nsplits) +
                          " table indices (need n + 1, n + 1, n)");
    }
    if (sc[0] != 0 || sc[nsplits] != ncodes) {
        throw CorruptData("split code positions must run from 0 to " + std::to_string(ncodes) +
                          ", not " + std::to_string(sc[0]) + " to " +
                          std::to_string(sc[nsplits]));
    }
    if (so[0] != 0 || so[nsplits] != total_out) {
        throw CorruptData("split output positions must run from 0 to " +
                          std::to_string(total_out) + ", not " + std::to_string(so[0]) +
                          " to " + std::to_string(so[nsplits]));
    }
    for (int64_t k = 0; k < nsplits; ++k) {
        if (sc[k + 1] < sc[k] || so[k + 1] < so[k]) {
            throw CorruptData("split positions must be non-decreasing");
        }
    }
    if (nsplits) {
        // decoder.py names the largest index; a negative one (never read) the smallest
        const int64_t hi = *std::max_element(st, st + nsplits);
        const int64_t lo = *std::min_element(st, st + nsplits);
        if (hi >= nt || lo < 0) {
            throw CorruptData("split table index " + std::to_string(hi >= nt ? hi : lo) +
                              " but only " + std::to_string(nt) + " tables");
        }
    }
}

}  // namespace

void check_splits(const Splits& sp, int64_t nc, int64_t no, int64_t ncodes, int64_t total_out,
                  int64_t nt) {
    check_split_points(sp.codes, sp.out, sp.table, sp.n, nc, no, ncodes, total_out, nt);
}

void check_splits(const int64_t* codes, const int64_t* out, const uint16_t* table,
                  int64_t nsplits, int64_t nc, int64_t no, int64_t ncodes, int64_t total_out,
                  int64_t nt) {
    check_split_points(codes, out, table, nsplits, nc, no, ncodes, total_out, nt);
}

template <class Off>
void check_column(int64_t ncodes, const Splits& sp, int64_t nc, int64_t no,
                  const CompactTables& tb, int64_t total_out, const Off* ends, int64_t nends,
                  const int64_t* code_offsets, int64_t ncode_offsets, int threads) {
    // the tables: compact_tables' form, or a kernel would read outside them
    const int64_t nt = tb.ntables;
    if (tb.first[0] != 0) throw std::invalid_argument("table starts must begin at 0");
    for (int64_t t = 0; t < nt; ++t) {
        // lo lies in [0, 255 t] (checked so far): hi - lo overflows only where hi < lo
        const int64_t lo = tb.first[t], hi = tb.first[t + 1];
        if (hi < lo || hi - lo > kMaxSymbols) {
            throw std::invalid_argument("table " + std::to_string(t) + " has symbols " +
                                        std::to_string(lo) + ".." + std::to_string(hi) +
                                        " (at most 255)");
        }
        const int64_t count = hi - lo;
        for (int64_t c = 0; c < count; ++c) {
            if (tb.lens[256 * t + c] == 0) {
                throw std::invalid_argument("table " + std::to_string(t) + " has no length for " +
                                            "its code " + std::to_string(c));
            }
        }
        for (int64_t c = count; c < 256; ++c) {
            if (tb.lens[256 * t + c] != 0) {
                throw std::invalid_argument("table " + std::to_string(t) + " has a length for " +
                                            "code " + std::to_string(c) + " past its symbols");
            }
        }
    }
    if (tb.npacked < tb.first[nt] + kMaxSymbols) {
        throw std::invalid_argument("packed symbols need " + std::to_string(kMaxSymbols) +
                                    " words of zero padding");
    }
    check_lengths(tb.lens, nt);
    check_splits(sp, nc, no, ncodes, total_out, nt);
    // the string ends and code offsets
    if (!ends) return;
    if (nends < 1 || ends[0] != 0 || int64_t(ends[nends - 1]) != total_out) {
        throw CorruptData("string ends must run from 0 to the " + std::to_string(total_out) +
                          " output bytes");
    }
    // a block at a time without an exit inside it, so that the compiler vectorises the test;
    // blocks of 1 M ends on the threads
    constexpr int64_t kEndsTask = 1 << 20;
    const int64_t ntasks = (nends - 1 + kEndsTask - 1) / kEndsTask;
    std::vector<uint8_t> falls(static_cast<size_t>(std::max<int64_t>(ntasks, 0)));
    parallel_for(ntasks, threads, [&](int64_t k) {
        const int64_t t1 = std::min(nends - 1, (k + 1) * kEndsTask);
        Off down = 0;  // (a bool accumulator is not vectorised)
        for (int64_t r0 = k * kEndsTask; r0 < t1 && !down; r0 += 4096) {
            const int64_t r1 = std::min(t1, r0 + 4096);
            for (int64_t r = r0; r < r1; ++r) down |= Off(ends[r + 1] < ends[r]);
        }
        falls[static_cast<size_t>(k)] = down != 0;
    });
    if (std::find(falls.begin(), falls.end(), 1) != falls.end()) {
        throw CorruptData("string ends must be non-decreasing");
    }
    if (ncode_offsets >= 0 && (ncode_offsets != nends || code_offsets[0] != 0 ||
                               code_offsets[nends - 1] != ncodes)) {
        throw CorruptData("code offsets must be " + std::to_string(nends) +
                          " positions from 0 to " + std::to_string(ncodes));
    }
}

namespace {

// Whether every symbol of each table is ASCII (their 8-byte words, padding included: a
// superset of the bytes a decode writes), for the UTF-8 check: a split decoded with such a
// table and ASCII literals wrote ASCII, valid UTF-8 however it is cut into strings.
std::vector<uint8_t> ascii_tables(const CompactTables& tb) {
    std::vector<uint8_t> ascii(static_cast<size_t>(tb.ntables));
    for (int64_t t = 0; t < tb.ntables; ++t) {
        uint64_t bits = 0;
        for (int64_t c = tb.first[t]; c < tb.first[t + 1]; ++c) bits |= tb.packed[c];
        ascii[t] = (bits & 0x8080808080808080ull) == 0;
    }
    return ascii;
}

// The first r in [lo, n) with ends[r] > v (n when none), for non-decreasing ends with no
// ends[r] > v below lo: a galloping search from lo. The searches of a task move a few strings
// on each time; a binary search of the whole array took ~17 steps of cache misses each (a
// tenth of an ASCII column's decode, at one search per 32 KB).
template <class Off>
int64_t upper_from(const Off* ends, int64_t lo, int64_t n, int64_t v) {
    int64_t step = 1;
    for (;;) {
        const int64_t probe = lo + step - 1;
        if (probe >= n) return std::upper_bound(ends + lo, ends + n, Off(v)) - ends;
        if (int64_t(ends[probe]) > v) {
            return std::upper_bound(ends + lo, ends + probe, Off(v)) - ends;
        }
        lo = probe + 1;
        step *= 2;
    }
}

// The UTF-8 check of strings lo:hi (whole in out); the first invalid one or -1. With simd the
// run is first checked as one stream (decode_utf8.h) and, when it holds a non-ASCII byte, for
// a string that starts on a continuation byte (utf8.py's method); only a run that fails goes
// to the per-string kernel, to name its first invalid string.
template <class Off>
int64_t first_invalid(const Kernels& kern, const uint8_t* out, const Off* ends, int64_t lo,
                      int64_t hi, const uint64_t* dfa, bool simd, bool simd512) {
    if (lo >= hi) return -1;
    if (simd) {
        const int64_t a = ends[lo], b = ends[hi];
        bool high = false;
        bool ok = stream_valid_simd(out + a, b - a, &high, simd512);
        for (int64_t s = lo + 1; ok && high && s < hi; ++s) {
            const int64_t p = ends[s];
            ok = p >= b || (out[p] & 0xC0) != 0x80;
        }
        if (ok) return -1;
    }
    if constexpr (sizeof(Off) == 4) {
        return kern.utf8_32(out, reinterpret_cast<const int32_t*>(ends), lo, hi, dfa);
    } else {
        return kern.utf8_64(out, reinterpret_cast<const int64_t*>(ends), lo, hi, dfa);
    }
}

}  // namespace

template <class Off>
int64_t decode_column(const uint8_t* codes, const Splits& sp, const CompactTables& tb,
                      uint8_t* out, int64_t total_out, const StringEnds<Off>* se, int threads) {
    const Kernels& kern = kernels(active_isa());
    const uint64_t* dfa = utf8_dfa();
    const bool simd = has_simd_utf8();
    const bool simd512 = active_isa() >= Isa::avx512;
    const int64_t nsplits = sp.n;
    const int64_t *sc = sp.codes, *so = sp.out, *st = sp.table;
    const bool check = se && se->check;
    const bool utf8 = se && se->utf8;
    const Off* ends = se ? se->ends : nullptr;
    const int64_t nends = se ? se->n + 1 : 0;
    // tasks of about kTaskBytes of output, cut at split boundaries (decoder.py's)
    const int64_t ntasks = std::max<int64_t>(1, std::min(nsplits, total_out / kTaskBytes));
    // each task's first bad split and how many: a status and row a split (16 bytes) took 1.6x
    // the output at split_size=1, where a split is a code
    struct Bad {
        int64_t k = -1, status = 0, row = 0, count = 0;
    };
    std::vector<Bad> bad_split(static_cast<size_t>(ntasks));
    std::vector<int64_t> bounds(static_cast<size_t>(ntasks + 1));
    for (int64_t t = 0; t < ntasks; ++t) {
        const int64_t target = static_cast<int64_t>((__int128)total_out * t / ntasks);
        bounds[t] = std::lower_bound(so, so + nsplits, target) - so;
    }
    bounds[ntasks] = nsplits;
    std::vector<int64_t> bad_utf8(static_cast<size_t>(ntasks), -1);
    const std::vector<uint8_t> ascii = utf8 ? ascii_tables(tb) : std::vector<uint8_t>();
    parallel_for(ntasks, threads, [&](int64_t t) {
        const int64_t k0 = bounds[t], k1 = bounds[t + 1];
        // the walk's notes (decode_walk.h): code positions only to compare with code offsets
        const bool offsets = check && se->code_offsets;
        std::vector<int64_t> starts(offsets ? walk::kStarts : 0, INT64_MIN);  // older than any
        std::vector<uint8_t> marks(check && !offsets ? walk::kMarks : 0);
        const walk::Notes<true> by_position{starts.data(), nullptr};
        const walk::Notes<false> by_mark{nullptr, marks.data()};
        // UTF-8: the strings whole inside this task's output, from the first starting in it
        int64_t vrow = utf8 ? std::lower_bound(ends, ends + nends, Off(so[k0])) - ends : 0;
        int64_t vpos = so[k0];
        // the output end of this task's last split that may hold a byte >= 0x80: strings
        // starting at or after it are ASCII
        int64_t high_end = INT64_MIN;
        int64_t row0 = check ? upper_from(ends, 0, nends, so[k0]) : 0;  // the last split's row
        bool ok = true;
        for (int64_t k = k0; k < k1; ++k) {
            const int64_t t_ = st[k];
            const uint64_t* packed = tb.packed + tb.first[t_];
            const uint8_t* lens = tb.lens + 256 * t_;
            uint8_t literals = 0;
            int64_t status, row = 0;
            if (check) {
                row = row0 = upper_from(ends, row0, nends, so[k]);
                const bool known = !plain::has_unknown(codes, sc[k], sc[k + 1],
                                                       int(tb.first[t_ + 1] - tb.first[t_]));
                const auto walked = [&](auto known_, const auto& notes) {
                    return walk::decode_checked<Off, decltype(known_)::value>(
                        codes, sc[k], sc[k + 1], packed, lens, out, so[k], so[k + 1], ends, nends,
                        se->code_offsets, row, notes, literals);
                };
                if (offsets) {
                    status = known ? walked(std::true_type{}, by_position)
                                   : walked(std::false_type{}, by_position);
                } else {
                    status = known ? walked(std::true_type{}, by_mark)
                                   : walked(std::false_type{}, by_mark);
                }
            } else {
                // 8-byte stores may run on into the next splits of this task (decoded after
                // this one, by this thread), never past the task's end
                status = plain::decode(codes, sc[k], sc[k + 1], packed, lens,
                                       tb.first[t_ + 1] - tb.first[t_], out, so[k], so[k + 1],
                                       so[k1], literals);
            }
            if (status != so[k + 1]) {
                Bad& b = bad_split[static_cast<size_t>(t)];
                if (b.k < 0) b = Bad{k, status, row, 0};
                ++b.count;
            }
            ok = ok && status == so[k + 1];
            if (utf8 && (!ascii[t_] || literals >= 0x80)) high_end = so[k + 1];
            if (utf8 && ok && bad_utf8[t] < 0 &&
                (so[k + 1] - vpos >= kUtf8Bytes || k + 1 == k1)) {
                // the strings completed so far: ends[r + 1] <= so[k + 1]
                const int64_t hi = upper_from(ends, vrow, nends, so[k + 1]) - 1;
                if (high_end > int64_t(ends[vrow])) {  // else ASCII: valid
                    bad_utf8[t] = first_invalid(kern, out, ends, vrow, hi, dfa, simd, simd512);
                }
                vrow = std::max(vrow, hi);
                vpos = so[k + 1];
            }
        }
    });
    Bad first;  // the tasks are in split order: the first task's first bad split is the first
    int64_t nbad = 0;
    for (const Bad& b : bad_split) {
        if (first.k < 0 && b.k >= 0) first = b;
        nbad += b.count;
    }
    if (first.k >= 0) {
        const int64_t k = first.k;
        const int64_t status = first.status, row = first.row;
        const std::string where = "split " + std::to_string(k) + ", codes " +
                                  range(sc[k], sc[k + 1]);
        if (status == walk::kCrosses) {
            throw CorruptData("string " + std::to_string(row - 1) +
                              ": a symbol runs across its end (" + where + ")");
        }
        if (status == walk::kOffset) {
            throw CorruptData("string " + std::to_string(row) + ": its stored code offset " +
                              std::to_string(se->code_offsets[row]) +
                              " is not where its codes start (" + where + ")");
        }
        const std::string what = status < 0
                                     ? "is corrupt"
                                     : "ends at output byte " + std::to_string(status);
        throw CorruptData("split " + std::to_string(k) + " (codes " + range(sc[k], sc[k + 1]) +
                          ", table " + std::to_string(st[k]) + ") " + what +
                          "; expected output bytes " + range(so[k], so[k + 1]) + " (" +
                          std::to_string(nbad) + " bad splits)");
    }
    if (!utf8) return -1;
    // the strings across a task boundary (no task holds them whole), then the smallest index
    int64_t bad = -1, last = -1;
    for (int64_t t = 1; t < ntasks; ++t) {
        const Off p = Off(so[bounds[t]]);
        const int64_t r = std::upper_bound(ends, ends + nends, p) - ends - 1;
        if (r != last && r >= 0 && r + 1 < nends && ends[r] < p && ends[r + 1] > p) {
            const int64_t b = first_invalid(kern, out, ends, r, r + 1, dfa, simd, simd512);
            if (b >= 0 && (bad < 0 || b < bad)) bad = b;
            last = r;
        }
    }
    for (int64_t b : bad_utf8) {
        if (b >= 0 && (bad < 0 || b < bad)) bad = b;
    }
    return bad;
}

template void check_column<int32_t>(int64_t, const Splits&, int64_t, int64_t,
                                    const CompactTables&, int64_t, const int32_t*, int64_t,
                                    const int64_t*, int64_t, int);
template void check_column<int64_t>(int64_t, const Splits&, int64_t, int64_t,
                                    const CompactTables&, int64_t, const int64_t*, int64_t,
                                    const int64_t*, int64_t, int);
template int64_t decode_column<int32_t>(const uint8_t*, const Splits&, const CompactTables&,
                                        uint8_t*, int64_t, const StringEnds<int32_t>*, int);
template int64_t decode_column<int64_t>(const uint8_t*, const Splits&, const CompactTables&,
                                        uint8_t*, int64_t, const StringEnds<int64_t>*, int);

}  // namespace fsstgpu_native
