// FSST training: the rounds of compress-and-count and table selection that
// fsstgpu/training.py describes. Training codes: 0-255 stand for escaped bytes, 256 + i for
// symbol i of the current table, so a round's counts need no escape bookkeeping.
#include "train.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "matcher.h"

namespace fsstgpu_native {

namespace {

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

// Make the next table from a round's counts; write it over codes 256+ of sym_val/sym_len and
// return its size. The pair counters read are zeroed. Candidates: the current symbols and
// escaped bytes (count1; single bytes weighted by single_weight) and, when frac < 128, the
// ntouched counted pairs; those seen fewer than min_count * frac / 128 times are dropped, the
// same symbol from several sources merged (gains summed), and the best 255 by gain
// (count * length) taken (choose).
template <class Counter>
int next_table(int frac, uint64_t* sym_val, int64_t* sym_len, int nsym, const int64_t* count1,
               int64_t ntouched, int min_count, int single_weight, Work<Counter>& w) {
    const size_t most = size_t(kCodeBase + nsym + (frac < 128 ? ntouched : 0));
    uint64_t* cval = w.cval.grow(most);
    int64_t* clen = w.clen.grow(most);
    int64_t* cgain = w.cgain.grow(most);
    int64_t m = 0;
    const int64_t thr = (int64_t(min_count) * frac) / 128;
    for (int k = 0; k < kCodeBase + nsym; ++k) {
        int64_t cnt = count1[k];
        if (cnt == 0) continue;
        const int64_t ln = sym_len[k];
        if (ln == 1) cnt *= single_weight;
        if (cnt < thr) continue;
        cval[m] = sym_val[k];
        clen[m] = ln;
        cgain[m] = cnt * ln;
        ++m;
    }
    if (frac < 128) {
        Counter* count2 = w.count2.get();
        const int32_t* touched = w.touched.p.get();
        // Branch-free, each pair written and kept or not: most pairs fall below thr, in no
        // predictable pattern, and the counter loads (random, in L2) overlap only when no
        // mispredicted branch stands between them.
        for (int64_t t = 0; t < ntouched; ++t) {
            const int64_t idx = touched[t];
            const int64_t cnt = count2[idx];
            count2[idx] = 0;  // zero again for the next round
            const int64_t p1 = idx / kNCodes;
            const int64_t l1 = sym_len[p1];
            const int64_t p2 = idx % kNCodes;
            const int64_t ln = std::min<int64_t>(8, l1 + sym_len[p2]);
            // (l1 == 8: no candidate, the shift kept in range)
            const uint64_t v = (sym_val[p1] | (sym_val[p2] << ((8 * l1) & 63))) &
                               (~uint64_t(0) >> (64 - 8 * ln));
            cval[m] = v;
            clen[m] = ln;
            cgain[m] = cnt * ln;
            m += (cnt >= thr) & (l1 < 8);
        }
    }
    // Merge duplicates (the same symbol can arise from several pairs) in a hash map keyed by
    // (value, length), compacting the candidates in place in order of first sight.
    // The map's slots hold the candidate's value too, so a probe reads one cache line.
    int bits = 10;
    while ((int64_t(1) << bits) < 2 * m) ++bits;
    const int64_t cap = int64_t(1) << bits;
    int32_t* slot_of = w.slot_of.grow(size_t(cap));
    uint64_t* slot_val = w.slot_val.grow(size_t(cap));
    std::fill(slot_of, slot_of + cap, -1);
    int64_t u = 0;
    for (int64_t k = 0; k < m; ++k) {
        const uint64_t v = cval[k];
        const int64_t ln = clen[k];
        // Fibonacci hashing: the map's order is not the candidates' (first sight is)
        for (int64_t h = int64_t(((v ^ uint64_t(ln)) * 0x9E3779B97F4A7C15ull) >> (64 - bits));;
             h = (h + 1) & (cap - 1)) {
            const int32_t q = slot_of[h];
            if (q < 0) {
                slot_of[h] = static_cast<int32_t>(u);
                slot_val[h] = v;
                cval[u] = v;  // u <= k: overwrites only entries already read
                clen[u] = ln;
                cgain[u] = cgain[k];
                ++u;
                break;
            }
            if (slot_val[h] == v && clen[q] == ln) {
                cgain[q] += cgain[k];
                break;
            }
        }
    }
    // One symbol of 3+ bytes per hash slot (the reference's rule): measured on dbtext, chains
    // cost ratio (overlapping symbols such as "the" and "the " share their counts).
    return choose(u, w, sym_val, sym_len);
}

// Train on sample s (8 bytes of slack after its end) with the thread's scratch.
template <class Counter>
Symbols build(const uint8_t* s, const int64_t* soffs, int64_t nlines, const TrainOptions& opt) {
    const int64_t size = soffs[nlines] - soffs[0];
    Work<Counter>& w = Work<Counter>::of_this_thread();
    w.dirty = true;
    // at most two new pair counters per symbol, one symbol per byte at most
    int32_t* touched = w.touched.grow(size_t(2 * size + 2));
    // codes 0-255: escaped bytes (value b, length 1), 256 + i: symbol i of the current table
    uint64_t sym_val[kNCodes];
    int64_t sym_len[kNCodes];
    int64_t count1[kNCodes];
    for (int k = 0; k < kNCodes; ++k) {
        sym_val[k] = uint64_t(k);
        sym_len[k] = 1;
    }
    int nsym = 0;
    int64_t best_gain = -(int64_t(1) << 62);
    uint64_t best_val[kNCodes];
    int64_t best_len[kNCodes], best_count1[kNCodes];
    int best_nsym = 0;
    const int rounds = 4 + std::max(opt.extra_rounds, 0) + 1;
    for (int round = 0; round < rounds; ++round) {
        // the fraction of strings compressed grows 8, 38, 68, 98, then 127 (extra rounds:
        // all but 1/128) and 128: the last, without pairs
        const int frac = round < 4 ? 8 + 30 * round : round < rounds - 1 ? 127 : 128;
        fill(w.matcher, nsym, sym_val + kCodeBase, sym_len + kCodeBase);
        std::fill(count1, count1 + kNCodes, 0);
        int64_t ntouched = 0;
        const int64_t gain =
            frac < 128 ? compress_count<true>(s, soffs, nlines, frac, w.matcher, count1,
                                              w.count2.get(), touched, ntouched)
                       : compress_count<false>(s, soffs, nlines, frac, w.matcher, count1,
                                               w.count2.get(), touched, ntouched);
        if (gain >= best_gain) {
            best_gain = gain;
            std::copy(sym_val, sym_val + kNCodes, best_val);
            std::copy(sym_len, sym_len + kNCodes, best_len);
            std::copy(count1, count1 + kNCodes, best_count1);
            best_nsym = nsym;
        }
        if (frac < 128) {
            nsym = next_table(frac, sym_val, sym_len, nsym, count1, ntouched, opt.min_count,
                              opt.single_weight, w);
        }
    }
    const int n = next_table(128, best_val, best_len, best_nsym, best_count1, 0, opt.min_count,
                             opt.single_weight, w);
    w.dirty = false;  // every pair counter read was zeroed, every slot_best reset
    Symbols out;
    out.values.assign(best_val + kCodeBase, best_val + kCodeBase + n);
    out.lengths.resize(n);
    for (int i = 0; i < n; ++i) out.lengths[i] = static_cast<uint8_t>(best_len[kCodeBase + i]);
    return out;
}

// The thread's sample buffer: bytes with 8 bytes of slack, and offsets.
struct SampleScratch {
    Buffer<uint8_t> bytes;
    std::vector<int64_t> offsets;
    static SampleScratch& of_this_thread() {
        static thread_local SampleScratch scratch;
        return scratch;
    }
};

// Random strings of lo:hi (a random 512-byte piece of longer ones) until target bytes are
// collected into dst (room for target + kDrawSlack bytes: the last string can overshoot, and
// 8 bytes of slack are zeroed after it), their ends after offsets' 0. lo:hi must hold at
// least target >= 1 bytes. Returns the bytes drawn.
constexpr int64_t kDrawSlack = kSampleLine - 1 + 8;
int64_t draw_sample(const uint8_t* data, const int64_t* offsets, int64_t lo, int64_t hi,
                    int64_t target, uint64_t seed, uint8_t* dst,
                    std::vector<int64_t>& out_offsets) {
    const uint64_t n = uint64_t(hi - lo);
    // x % n without a division (Lemire, Kaser and Kurz 2019: exact for 64-bit x with a
    // 128-bit multiplier): short strings make thousands of draws, and a division each was
    // most of drawing's time
    const unsigned __int128 magic = n > 1 ? ~(unsigned __int128)0 / n + 1 : 0;
    auto mod_n = [&](uint64_t x) -> uint64_t {
        const unsigned __int128 low = magic * x;
        const unsigned __int128 top = (unsigned __int128)uint64_t(low >> 64) * n +
                                      (((unsigned __int128)uint64_t(low) * n) >> 64);
        return uint64_t(top >> 64);
    };
    out_offsets.assign(1, 0);
    int64_t filled = 0;
    // Draw k's string is lo + mod_n(s_k), s_0 = mix(seed), s_k+1 = mix(mix(s_k)): a sequence
    // known ahead of the strings drawn. Each draw reads two random places (its offsets, then
    // its bytes), cache and TLB misses both: so the offsets of the draw kOffsetsAhead on are
    // loaded, and the bytes of the one kBytesAhead on (its offsets loaded by then).
    constexpr int kRing = 32, kOffsetsAhead = 24, kBytesAhead = 12;
    uint64_t ring_state[kRing];
    int64_t ring_line[kRing];
    uint64_t gen = mix(seed);  // the state of draw k + kOffsetsAhead
    auto queue = [&](int64_t k) {
        const int j = int(k & (kRing - 1));
        ring_state[j] = gen;
        ring_line[j] = lo + int64_t(mod_n(gen));
        __builtin_prefetch(offsets + ring_line[j]);
        gen = mix(mix(gen));
    };
    for (int64_t k = 0; k < kOffsetsAhead; ++k) queue(k);
    for (int64_t k = 0; filled < target; ++k) {
        queue(k + kOffsetsAhead);
        {
            const int j = int((k + kBytesAhead) & (kRing - 1));
            const int64_t at = offsets[ring_line[j]];
            const int64_t ln = offsets[ring_line[j] + 1] - at;
            // a long string's piece as the draw will pick it (an empty one is skipped: the
            // draw takes a later string, not loaded ahead)
            const int64_t start =
                ln > kSampleLine
                    ? kSampleLine * int64_t(mix(ring_state[j]) % uint64_t(1 + (ln - 1) / kSampleLine))
                    : 0;
            __builtin_prefetch(data + at + start);
        }
        const int j = int(k & (kRing - 1));
        uint64_t state = ring_state[j];
        int64_t line = ring_line[j];
        while (offsets[line + 1] == offsets[line]) {  // skip empty strings: some are not
            if (++line == hi) line = lo;
        }
        const int64_t ln = offsets[line + 1] - offsets[line];
        state = mix(state);
        const int64_t pieces = 1 + (ln - 1) / kSampleLine;
        const int64_t start = pieces == 1 ? 0 : kSampleLine * int64_t(state % uint64_t(pieces));
        const int64_t take = std::min(ln - start, kSampleLine);
        std::memcpy(dst + filled, data + offsets[line] + start, size_t(take));
        filled += take;
        out_offsets.push_back(filled);
    }
    std::memset(dst + filled, 0, 8);
    return filled;
}

// Train on a sample whose bytes have 8 bytes of slack: the counter width picked.
Symbols train_padded(const uint8_t* bytes, const int64_t* offsets, int64_t nstrings,
                     const TrainOptions& options) {
    // A pair counter gets at most one increment per sample byte: 16 bits suffice below 64 KB
    // and halve the counters' 512 K entries, which then stay in the L2 cache.
    const int64_t size = offsets[nstrings] - offsets[0];
    if (options.counter_bits == 32 || (options.counter_bits == 0 && size >= 65536)) {
        return build<uint32_t>(bytes, offsets, nstrings, options);
    }
    if (options.counter_bits != 0 && options.counter_bits != 16) {
        throw std::invalid_argument("counter_bits must be 0, 16 or 32");
    }
    if (size >= 65536) {
        throw std::invalid_argument("16-bit pair counters need a sample under 64 KB");
    }
    return build<uint16_t>(bytes, offsets, nstrings, options);
}

}  // namespace

int64_t sample_into(const uint8_t* data, const int64_t* offsets, int64_t lo, int64_t hi,
                    int64_t target, uint64_t seed, Sample& out) {
    const int64_t raw = offsets[hi] - offsets[lo];
    if (raw < target) {
        if (out.bytes.size() < size_t(raw + 8)) out.bytes.resize(size_t(raw + 8));
        if (raw > 0) std::memcpy(out.bytes.data(), data + offsets[lo], size_t(raw));
        std::memset(out.bytes.data() + raw, 0, 8);
        out.offsets.resize(size_t(hi - lo + 1));
        for (int64_t i = lo; i <= hi; ++i) out.offsets[i - lo] = offsets[i] - offsets[lo];
        return raw;
    }
    if (out.bytes.size() < size_t(target + kDrawSlack)) out.bytes.resize(size_t(target + kDrawSlack));
    return draw_sample(data, offsets, lo, hi, target, seed, out.bytes.data(), out.offsets);
}

Sample sample_of(const uint8_t* data, const int64_t* offsets, int64_t lo, int64_t hi,
                 int64_t target, uint64_t seed) {
    Sample out;
    out.bytes.resize(size_t(sample_into(data, offsets, lo, hi, target, seed, out)));
    return out;
}

Symbols train_sample(const uint8_t* bytes, const int64_t* offsets, int64_t nstrings,
                     const TrainOptions& options) {
    // copied: the copy has the slack that lets every load take 8 bytes (<= 64 KB usually)
    const int64_t size = offsets[nstrings] - offsets[0];
    SampleScratch& scratch = SampleScratch::of_this_thread();
    uint8_t* padded = scratch.bytes.grow(size_t(size + 8));
    if (size > 0) std::memcpy(padded, bytes, size_t(size));
    std::memset(padded + size, 0, 8);
    return train_padded(padded, offsets, nstrings, options);
}

Symbols train_range(const uint8_t* data, const int64_t* offsets, int64_t lo, int64_t hi,
                    int64_t target, uint64_t seed, const TrainOptions& options) {
    if (offsets[hi] - offsets[lo] < target) {
        return train_sample(data + offsets[lo], offsets + lo, hi - lo, options);
    }
    SampleScratch& scratch = SampleScratch::of_this_thread();
    draw_sample(data, offsets, lo, hi, target, seed,
                scratch.bytes.grow(size_t(target + kDrawSlack)), scratch.offsets);
    return train_padded(scratch.bytes.p.get(), scratch.offsets.data(),
                        static_cast<int64_t>(scratch.offsets.size()) - 1, options);
}

void check_train_range(int64_t size, const int64_t* offsets, int64_t n, int64_t lo, int64_t hi,
                       int64_t target) {
    if (n < 0) throw std::invalid_argument("offsets must hold n + 1 string boundaries");
    if (lo < 0 || lo > hi || hi > n) {
        throw std::invalid_argument("strings " + std::to_string(lo) + ":" + std::to_string(hi) +
                                    " are not a range of 0:" + std::to_string(n));
    }
    if (target < 1) {
        throw std::invalid_argument("sample_bytes must be positive, not " +
                                    std::to_string(target));
    }
    if (offsets[lo] < 0 || offsets[hi] > size) {
        throw std::invalid_argument("offsets must be non-decreasing and inside data");
    }
    for (int64_t i = lo; i < hi; ++i) {
        if (offsets[i + 1] < offsets[i]) {
            throw std::invalid_argument("offsets must be non-decreasing and inside data");
        }
    }
}

Symbols rank_symbols(const uint64_t* values, const int64_t* lengths, int nsym,
                     const int64_t* count1, int min_count, int single_weight) {
    if (nsym < 0 || nsym > 256) {
        throw std::invalid_argument("nsym must be 0-256, not " + std::to_string(nsym));
    }
    uint64_t sym_val[kNCodes];
    int64_t sym_len[kNCodes];
    for (int k = 0; k < kNCodes; ++k) {
        if (lengths[k] < 1 || lengths[k] > 8) {
            throw std::invalid_argument("symbol lengths must be 1-8");
        }
        // bounded so that gains (count * weight * length, summed) cannot overflow
        if (count1[k] < 0 || count1[k] >= (int64_t(1) << 40)) {
            throw std::invalid_argument("counts must be 0 to 2**40");
        }
        sym_val[k] = values[k];
        sym_len[k] = lengths[k];
    }
    if (min_count < 0 || single_weight < 0 || single_weight > 1 << 12) {
        throw std::invalid_argument("min_count must be >= 0, single_weight 0-4096");
    }
    Work<uint16_t>& w = Work<uint16_t>::of_this_thread();
    const int n = next_table(128, sym_val, sym_len, nsym, count1, 0, min_count, single_weight,
                             w);
    Symbols out;
    out.values.assign(sym_val + kCodeBase, sym_val + kCodeBase + n);
    out.lengths.assign(sym_len + kCodeBase, sym_len + kCodeBase + n);
    return out;
}

}  // namespace fsstgpu_native
