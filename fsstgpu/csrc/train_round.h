// The pieces of one training round (train.cpp, the only file that includes this): the lookup
// in training codes, the per-thread scratch, compress-and-count over the sample, and the
// choice of the best 255 candidates. Training codes: 0-255 stand for escaped bytes, 256 + i for
// symbol i of the current table, so a round's counts need no escape bookkeeping.
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "matcher.h"
#include "train.h"

namespace fsstgpu_native {

namespace {  // internal to train.cpp

constexpr int kCodeBase = 256;
constexpr int kNCodes = 512;

// SplitMix64 step: a well-spread 64-bit hash of x.
inline uint64_t mix(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// The encoder's longest-match lookup (matcher.h) for training codes, in 16-bit entries
// code | length << 9, kept sparse so that a new table rewrites only its own entries (refilling
// 65536 2-byte entries each round was 13% of training): a zero 2-byte entry means "byte_code
// of the first byte". Trained tables have at most one 3-8 byte symbol per hash slot (choose),
// so a slot holds one symbol and the lookup needs no chain and no branch: the slot's symbol
// when it matches (then it is the longest match), else the 2-byte table's answer.
constexpr int kLenShift = 9;

inline int entry_code(uint32_t cl) { return cl & 0x1FF; }
inline int entry_len(uint32_t cl) { return (cl >> kLenShift) & 0xF; }

struct TrainMatcher {
    static constexpr int kNone = 255;  // the entry of an empty slot: matches nothing
    uint16_t byte_code[256];
    uint16_t short_code[65536];  // zero but where `written` says
    uint8_t slot[kHashSize];     // the 3-8 byte symbol of a hash slot, kNone but in `used`
    uint64_t ekey[256];          // the symbols, and the masks of their lengths
    uint64_t emask[256];
    uint16_t ecl[256];
    uint16_t written[256];  // the non-zero short_code entries
    uint16_t used[256];     // the slots set
    int nwritten = 0, nused = 0;

    TrainMatcher() {
        std::fill(std::begin(short_code), std::end(short_code), uint16_t(0));
        std::fill(std::begin(slot), std::end(slot), uint8_t(kNone));
        ekey[kNone] = 1;  // (word & 0) != 1
        emask[kNone] = 0;
        ecl[kNone] = 0;
    }
    // The entry of the (at least) 2 bytes starting word: its 2-byte symbol, else the first
    // byte's entry.
    uint32_t two(uint64_t word) const {
        const uint32_t sc = short_code[word & 0xFFFF];
        const uint32_t bc = byte_code[word & 0xFF];
        return sc ? sc : bc;
    }
    // The longest match at word, which holds 8 or more bytes of the string.
    uint32_t match8(uint64_t word) const {
        const int e = slot[hash3(word)];
        const uint32_t cl = two(word);
        return (word & emask[e]) == ekey[e] ? ecl[e] : cl;
    }
    // The longest match at word, which holds rem (2-7) bytes of the string, zero after them.
    uint32_t match(uint64_t word, int64_t rem) const {
        const int e = slot[hash3(word)];
        const uint32_t cl = two(word);
        const bool fits = entry_len(ecl[e]) <= rem;  // zero bytes past the end match nothing
        return fits & ((word & emask[e]) == ekey[e]) ? ecl[e] : cl;
    }
};

// Fill m for the nsym symbols of val/len (codes 256 + i), at most one of 3+ bytes per hash
// slot (else std::logic_error: choose never makes such a table).
void fill(TrainMatcher& m, int nsym, const uint64_t* val, const int64_t* len) {
    for (int k = 0; k < m.nwritten; ++k) m.short_code[m.written[k]] = 0;
    for (int k = 0; k < m.nused; ++k) m.slot[m.used[k]] = TrainMatcher::kNone;
    m.nwritten = m.nused = 0;
    for (int c = 0; c < 256; ++c) m.byte_code[c] = uint16_t(c | (1 << kLenShift));
    for (int i = 0; i < nsym; ++i) {
        if (len[i] == 1) m.byte_code[val[i] & 0xFF] = uint16_t((kCodeBase + i) | (1 << kLenShift));
    }
    int e = 0;
    for (int i = 0; i < nsym; ++i) {
        const int64_t ln = len[i];
        if (ln == 2) {
            const uint16_t w = uint16_t(val[i] & 0xFFFF);
            m.short_code[w] = uint16_t((kCodeBase + i) | (2 << kLenShift));
            m.written[m.nwritten++] = w;
        } else if (ln >= 3) {
            const int64_t h = hash3(val[i]);
            if (m.slot[h] != TrainMatcher::kNone) {
                throw std::logic_error("two trained symbols of 3+ bytes share a hash slot");
            }
            m.slot[h] = uint8_t(e);
            m.used[m.nused++] = uint16_t(h);
            m.ekey[e] = val[i];
            m.emask[e] = ~uint64_t(0) >> (64 - 8 * ln);
            m.ecl[e] = uint16_t((kCodeBase + i) | (ln << kLenShift));
            ++e;
        }
    }
}

// The 8 bytes at p (the sample buffer has 8 bytes of slack past its end).
inline uint64_t load8(const uint8_t* p) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    return w;
}

// A grow-only array, left uninitialised.
template <class T>
struct Buffer {
    std::unique_ptr<T[]> p;
    size_t n = 0;
    T* grow(size_t want) {
        if (want > n) {
            p.reset(new T[want]);
            n = want;
        }
        return p.get();
    }
};

// Scratch for training, kept per thread between trainings (a fresh MB of it cost more page
// faults than the training's compressing).
template <class Counter>
struct Work {
    TrainMatcher matcher;
    std::unique_ptr<Counter[]> count2;  // pair counters, kNCodes * kNCodes, zero between uses
    int64_t slot_best[kHashSize];       // all -1 between uses
    Buffer<int32_t> touched;            // the pair counters a round made non-zero
    Buffer<uint64_t> cval;              // candidates: value, length, gain
    Buffer<int64_t> clen, cgain, pick, kept;
    Buffer<int32_t> slot_of;            // the duplicate merge's map; then choose's slots
    Buffer<uint64_t> slot_val;          // the map's values
    bool dirty = false;  // a training left off midway (bad_alloc): the above not clean

    Work() : count2(new Counter[size_t(kNCodes) * kNCodes]()) {
        std::fill(std::begin(slot_best), std::end(slot_best), -1);
    }
    static Work& of_this_thread() {
        static thread_local std::unique_ptr<Work> work;
        if (!work || work->dirty) work = std::make_unique<Work>();
        return *work;
    }
};

// Compress the round's part of the sample (frac / 128 of its strings), counting symbols in
// count1 and, with Pairs, adjacent pairs in count2 (new ones appended to touched). Returns the
// bytes saved. The longest match is the encoder's (kernels_impl.h), with training codes.
template <bool Pairs, class Counter>
int64_t compress_count(const uint8_t* s, const int64_t* soffs, int64_t nlines, int frac,
                       const TrainMatcher& m, int64_t* count1, Counter* count2,
                       int32_t* touched, int64_t& ntouched) {
    const int64_t base = soffs[0];
    int64_t gain = 0, nt = ntouched;
    int64_t code1 = -1;
    // one symbol: count it, and (Pairs) the pairs it ends; branch-free where the branch
    // would be data-dependent
    auto count = [&](uint32_t cl, uint64_t word) {
        const int64_t code2 = entry_code(cl);
        const int64_t ln2 = entry_len(cl);
        const int64_t first = int64_t(word & 0xFF);
        gain += ln2 - 1 - (code2 < kCodeBase);
        count1[code2] += 1;
        count1[first] += (ln2 != 1);  // the first byte alone: the alternative
        if (Pairs && code1 >= 0) {
            // the concatenation of the two symbols is a candidate ...
            const int64_t idx = code1 * kNCodes + code2;
            const Counter c = count2[idx];
            touched[nt] = int32_t(idx);
            nt += (c == 0);
            count2[idx] = Counter(c + 1);
            // ... and so is the first symbol extended by one byte (idx2 == idx only when
            // ln2 == 1, when nothing is added)
            const int64_t idx2 = code1 * kNCodes + first;
            const Counter c2 = count2[idx2];
            touched[nt] = int32_t(idx2);
            nt += (c2 == 0) & (ln2 > 1);
            count2[idx2] = Counter(c2 + (ln2 > 1));
        }
        code1 = code2;
        return ln2;
    };
    for (int64_t i = 0; i < nlines; ++i) {
        if (frac < 128) {
            const uint64_t r = uint64_t(i + 1) * uint64_t(frac) * kHashPrime;
            if (1 + int64_t((r ^ (r >> 15)) & 127) > frac) continue;
        }
        int64_t pos = soffs[i] - base;
        const int64_t end = soffs[i + 1] - base;
        code1 = -1;
        // 8 or more bytes left: every symbol fits, no length checks
        while (pos + 8 <= end) {
            const uint64_t word = load8(s + pos);
            const uint32_t cl = m.match8(word);
            pos += count(cl, word);
        }
        // the last 1-7 bytes
        while (pos < end) {
            const int64_t rem = end - pos;
            const uint64_t word = load8(s + pos) & ((uint64_t(1) << (8 * rem)) - 1);
            const uint32_t cl = rem >= 2 ? m.match(word, rem) : m.byte_code[word & 0xFF];
            pos += count(cl, word);
        }
    }
    ntouched = nt;
    return gain;
}

// Whether candidate a ranks before b: more gain, then smaller value, then shorter (a total
// order on distinct symbols, so the table does not depend on candidate order).
inline bool before(int64_t gain_a, uint64_t val_a, int64_t len_a, int64_t gain_b,
                   uint64_t val_b, int64_t len_b) {
    return gain_a > gain_b ||
           (gain_a == gain_b && (val_a < val_b || (val_a == val_b && len_a < len_b)));
}

// Write the best 255 of the distinct candidates 0:u over codes 256+ of sym_val/sym_len (in no
// particular order), a 3+ byte symbol only when no better one has its hash slot; return how
// many. Taking candidates best first, a 3+ byte one is refused exactly when a better one of
// its slot was taken before it: so the taken set is the best 255 of the 1-2 byte candidates
// and of the best 3+ byte candidate of each slot, found without sorting by a bounded heap.
template <class Counter>
int choose(int64_t u, Work<Counter>& w, uint64_t* sym_val, int64_t* sym_len) {
    const uint64_t* val = w.cval.p.get();
    const int64_t* ln = w.clen.p.get();
    const int64_t* gain = w.cgain.p.get();
    int64_t* pick = w.pick.grow(size_t(u));
    int32_t* slot_of = w.slot_of.grow(size_t(u));  // each kept candidate's slot, -1: < 3 bytes
    int64_t* slot_best = w.slot_best;
    auto ranks_before = [&](int64_t a, int64_t b) {
        return before(gain[a], val[a], ln[a], gain[b], val[b], ln[b]);
    };
    // A candidate ranking below 255 candidates of 1-2 bytes (never refused) cannot be taken,
    // nor can it decide a slot whose best could be (that best ranks before it): so the
    // candidates below a lower bound on the 255th best 1-2 byte gain are dropped first (most
    // are: pairs seen a few times). The bound is the 255th gain itself below 256, else a power
    // of two, from a histogram. The taken set stays the same; the heap sees fewer candidates.
    int64_t floor_gain = INT64_MIN;
    if (u > 4 * kMaxSymbols) {
        constexpr int kExact = 256;  // gains below: a bucket each; above: one per bit length
        int64_t hist[kExact + 64] = {};
        for (int64_t c = 0; c < u; ++c) {
            const uint64_t g = uint64_t(std::max<int64_t>(gain[c], 0));
            const int b = g < kExact ? int(g) : kExact + (63 - __builtin_clzll(g));
            hist[b] += ln[c] <= 2;
        }
        int64_t above = 0;
        for (int b = kExact + 63; b >= 0; --b) {
            above += hist[b];
            if (above >= kMaxSymbols) {
                floor_gain = b < kExact ? b : int64_t(1) << (b - kExact);
                break;
            }
        }
    }
    int64_t* kept = w.kept.grow(size_t(u));
    int64_t nkept = 0;
    for (int64_t c = 0; c < u; ++c) {
        kept[nkept] = c;
        nkept += gain[c] >= floor_gain;
    }
    for (int64_t j = 0; j < nkept; ++j) {
        const int64_t c = kept[j];
        slot_of[j] = -1;
        if (ln[c] >= 3) {
            const int64_t h = hash3(val[c]);
            slot_of[j] = int32_t(h);
            const int64_t b = slot_best[h];
            if (b < 0 || ranks_before(c, b)) slot_best[h] = c;
        }
    }
    int64_t m = 0;
    // (branch-free: which candidates pass is data, and a mispredicted branch per candidate
    // cost more than the loops' work)
    for (int64_t j = 0; j < nkept; ++j) {
        const int32_t h = slot_of[j];
        pick[m] = kept[j];
        m += (h < 0) | (slot_best[h < 0 ? 0 : h] == kept[j]);
    }
    for (int64_t j = 0; j < nkept; ++j) {
        const int32_t h = slot_of[j];
        slot_best[h < 0 ? 0 : h] = -1;  // slot 0 too: all slots are -1 between uses anyway
    }
    if (m > kMaxSymbols) {
        // pick[:size]: a heap of the best so far, its root the worst of them (in place: the
        // heap never grows past the candidate being read)
        int64_t size = 0;
        int64_t root_gain = INT64_MIN;  // the root's gain once the heap is full
        for (int64_t j = 0; j < m; ++j) {
            const int64_t c = pick[j];
            if (size < kMaxSymbols) {
                int64_t i = size++;
                while (i > 0) {  // up: a parent ranks after its children
                    const int64_t q = pick[(i - 1) / 2];
                    if (!ranks_before(q, c)) break;
                    pick[i] = q;
                    i = (i - 1) / 2;
                }
                pick[i] = c;
                if (size == kMaxSymbols) root_gain = gain[pick[0]];
                continue;
            }
            if (gain[c] < root_gain || !ranks_before(c, pick[0])) continue;
            int64_t i = 0;
            while (2 * i + 1 < size) {  // down from the root
                int64_t wi = 2 * i + 1;
                int64_t q = pick[wi];
                if (wi + 1 < size) {
                    const int64_t r = pick[wi + 1];
                    if (ranks_before(q, r)) {  // the child that ranks last
                        wi += 1;
                        q = r;
                    }
                }
                if (!ranks_before(c, q)) break;
                pick[i] = q;
                i = wi;
            }
            pick[i] = c;
            root_gain = gain[pick[0]];
        }
        m = size;
    }
    for (int64_t j = 0; j < m; ++j) {
        sym_val[kCodeBase + j] = val[pick[j]];
        sym_len[kCodeBase + j] = ln[pick[j]];
    }
    return static_cast<int>(m);
}

}  // namespace

}  // namespace fsstgpu_native
