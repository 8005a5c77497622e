// FSST training: the rounds of compress-and-count and table selection that
// fsstgpu/training.py describes. Training codes: 0-255 stand for escaped bytes, 256 + i for
// symbol i of the current table, so a round's counts need no escape bookkeeping.
#include "train.h"

#include <algorithm>
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

// The longest-match lookup of the encoder (matcher.h's layout) for training codes: entries
// are code | length << 16 with 9-bit codes, | kLongFlag in short_code.
struct TrainMatcher {
    int32_t byte_code[256];
    int32_t short_code[65536];
    int32_t hhead[kHashSize];
    uint64_t ekey[256];
    int32_t ecl[256];
    int32_t enext[256];
    int32_t tail[kHashSize];
};

// Fill m for the nsym symbols of val/len (codes 256 + i), in table order: trained tables have
// one 3+ byte symbol per hash slot, so no chain needs ordering longest first.
void fill(TrainMatcher& m, int nsym, const uint64_t* val, const int64_t* len) {
    for (int c = 0; c < 256; ++c) m.byte_code[c] = c | (1 << 16);
    for (int i = 0; i < nsym; ++i) {
        if (len[i] == 1) m.byte_code[val[i] & 0xFF] = (kCodeBase + i) | (1 << 16);
    }
    for (int w = 0; w < 65536; ++w) m.short_code[w] = m.byte_code[w & 0xFF];
    for (int i = 0; i < nsym; ++i) {
        if (len[i] == 2) m.short_code[val[i] & 0xFFFF] = (kCodeBase + i) | (2 << 16);
    }
    std::fill(std::begin(m.hhead), std::end(m.hhead), -1);
    int e = 0;
    for (int i = 0; i < nsym; ++i) {
        const int64_t ln = len[i];
        if (ln < 3) continue;
        const int64_t h = hash3(val[i]);
        m.ekey[e] = val[i];
        m.ecl[e] = (kCodeBase + i) | static_cast<int32_t>(ln << 16);
        m.enext[e] = -1;
        if (m.hhead[h] < 0) {
            m.hhead[h] = e;
        } else {
            m.enext[m.tail[h]] = e;
        }
        m.tail[h] = e;
        ++e;
        m.short_code[val[i] & 0xFFFF] |= kLongFlag;
    }
}

// bytes[pos:min(pos + 8, end)] as a little-endian word, zero beyond end; size: the readable
// bytes at `bytes`.
inline uint64_t load_word(const uint8_t* bytes, int64_t pos, int64_t end, int64_t size) {
    const int64_t rem = end - pos;
    uint64_t w = 0;
    if (pos + 8 <= size) {
        std::memcpy(&w, bytes + pos, 8);
        if (rem < 8) w &= (uint64_t(1) << (8 * rem)) - 1;
        return w;
    }
    for (int64_t j = 0; j < std::min<int64_t>(rem, 8); ++j) {
        w |= uint64_t(bytes[pos + j]) << (8 * j);
    }
    return w;
}

// Scratch for one training, reused across its rounds.
template <class Counter>
struct Work {
    TrainMatcher matcher;
    std::vector<Counter> count2;   // pair counters, kNCodes * kNCodes, zero between rounds
    std::vector<int64_t> touched;  // the pair counters a round made non-zero
    std::vector<uint64_t> cval;    // candidates: value, length, gain
    std::vector<int64_t> clen, cgain, pick;
    std::vector<int32_t> slot_of;
    std::vector<int64_t> slot_best;  // kHashSize, all -1 between uses
};

struct Round {
    int64_t gain, ntouched;
};

// Compress the round's part of the sample (frac / 128 of its strings), counting symbols in
// count1 and, when frac < 128, pairs in count2.
template <class Counter>
Round compress_count(const uint8_t* s, int64_t size, const int64_t* soffs, int64_t nlines,
                     int frac, const TrainMatcher& m, int64_t* count1, Work<Counter>& w) {
    const int64_t base = soffs[0];
    Counter* count2 = w.count2.data();
    int64_t* touched = w.touched.data();
    int64_t gain = 0, ntouched = 0;
    for (int64_t i = 0; i < nlines; ++i) {
        if (frac < 128) {
            const uint64_t r = uint64_t(i + 1) * uint64_t(frac) * kHashPrime;
            if (1 + int64_t((r ^ (r >> 15)) & 127) > frac) continue;
        }
        int64_t pos = soffs[i] - base;
        const int64_t end = soffs[i + 1] - base;
        int64_t code1 = -1;
        while (pos < end) {
            const int64_t rem = end - pos;
            const uint64_t word = load_word(s, pos, end, size);
            int32_t cl;
            if (rem >= 2) {
                cl = m.short_code[word & 0xFFFF];
                if (rem >= 3 && (cl & kLongFlag)) {
                    for (int32_t e = m.hhead[hash3(word)]; e >= 0; e = m.enext[e]) {
                        const int ln = m.ecl[e] >> 16;
                        if (ln <= rem) {
                            const int sh = 64 - 8 * ln;
                            if ((word << sh) >> sh == m.ekey[e]) {
                                cl = m.ecl[e];
                                break;
                            }
                        }
                    }
                }
            } else {
                cl = m.byte_code[word & 0xFF];
            }
            const int64_t code2 = cl & 0xFFFF;
            const int64_t ln2 = (cl >> 16) & 0xFF;
            const int64_t first = int64_t(word & 0xFF);
            pos += ln2;
            gain += ln2 - (code2 < kCodeBase ? 2 : 1);
            count1[code2] += 1;
            if (ln2 != 1) count1[first] += 1;  // the first byte alone: the alternative
            if (frac < 128 && code1 >= 0) {
                // the concatenation of the two symbols is a candidate ...
                int64_t idx = code1 * kNCodes + code2;
                if (count2[idx] == 0) touched[ntouched++] = idx;
                count2[idx] += 1;
                if (ln2 > 1) {  // ... and so is the first symbol extended by one byte
                    idx = code1 * kNCodes + first;
                    if (count2[idx] == 0) touched[ntouched++] = idx;
                    count2[idx] += 1;
                }
            }
            code1 = code2;
        }
    }
    return Round{gain, ntouched};
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
    const uint64_t* val = w.cval.data();
    const int64_t* ln = w.clen.data();
    const int64_t* gain = w.cgain.data();
    int64_t* pick = w.pick.data();
    int64_t* slot_best = w.slot_best.data();
    auto ranks_before = [&](int64_t a, int64_t b) {
        return before(gain[a], val[a], ln[a], gain[b], val[b], ln[b]);
    };
    for (int64_t c = 0; c < u; ++c) {
        if (ln[c] >= 3) {
            const int64_t h = hash3(val[c]);
            const int64_t b = slot_best[h];
            if (b < 0 || ranks_before(c, b)) slot_best[h] = c;
        }
    }
    int64_t m = 0;
    for (int64_t c = 0; c < u; ++c) {
        if (ln[c] < 3 || slot_best[hash3(val[c])] == c) pick[m++] = c;
    }
    for (int64_t c = 0; c < u; ++c) {
        if (ln[c] >= 3) slot_best[hash3(val[c])] = -1;
    }
    if (m > kMaxSymbols) {
        // pick[:size]: a heap of the best so far, its root the worst of them (in place: the
        // heap never grows past the candidate being read)
        int64_t size = 0;
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
                continue;
            }
            if (!ranks_before(c, pick[0])) continue;
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
    uint64_t* cval = w.cval.data();
    int64_t* clen = w.clen.data();
    int64_t* cgain = w.cgain.data();
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
        Counter* count2 = w.count2.data();
        for (int64_t t = 0; t < ntouched; ++t) {
            const int64_t idx = w.touched[t];
            const int64_t cnt = count2[idx];
            count2[idx] = 0;  // zero again for the next round
            if (cnt < thr) continue;
            const int64_t p1 = idx / kNCodes;
            const int64_t l1 = sym_len[p1];
            if (l1 >= 8) continue;
            const int64_t p2 = idx % kNCodes;
            const int64_t ln = std::min<int64_t>(8, l1 + sym_len[p2]);
            uint64_t v = sym_val[p1] | (sym_val[p2] << (8 * l1));
            if (ln < 8) v &= (uint64_t(1) << (8 * ln)) - 1;
            cval[m] = v;
            clen[m] = ln;
            cgain[m] = cnt * ln;
            ++m;
        }
    }
    // Merge duplicates (the same symbol can arise from several pairs) in a hash map keyed by
    // (value, length), compacting the candidates in place in order of first sight.
    int64_t cap = 1024;
    while (cap < 2 * m) cap *= 2;
    if (static_cast<int64_t>(w.slot_of.size()) < cap) w.slot_of.resize(cap);
    int32_t* slot_of = w.slot_of.data();
    std::fill(slot_of, slot_of + cap, -1);
    int64_t u = 0;
    for (int64_t k = 0; k < m; ++k) {
        const uint64_t v = cval[k];
        const int64_t ln = clen[k];
        for (int64_t h = int64_t(mix(v ^ uint64_t(ln)) & uint64_t(cap - 1));;
             h = (h + 1) & (cap - 1)) {
            const int32_t q = slot_of[h];
            if (q < 0) {
                slot_of[h] = static_cast<int32_t>(u);
                cval[u] = v;  // u <= k: overwrites only entries already read
                clen[u] = ln;
                cgain[u] = cgain[k];
                ++u;
                break;
            }
            if (cval[q] == v && clen[q] == ln) {
                cgain[q] += cgain[k];
                break;
            }
        }
    }
    // One symbol of 3+ bytes per hash slot (the reference's rule): measured on dbtext, chains
    // cost ratio (overlapping symbols such as "the" and "the " share their counts).
    return choose(u, w, sym_val, sym_len);
}

template <class Counter>
Symbols build(const uint8_t* s, const int64_t* soffs, int64_t nlines, const TrainOptions& opt) {
    const int64_t size = soffs[nlines] - soffs[0];
    auto w = std::make_unique<Work<Counter>>();
    w->count2.assign(size_t(kNCodes) * kNCodes, 0);
    w->touched.resize(size_t(2 * size + 2));
    const size_t ncand = kNCodes + w->touched.size();  // symbols, escaped bytes and pairs
    w->cval.resize(ncand);
    w->clen.resize(ncand);
    w->cgain.resize(ncand);
    w->pick.resize(ncand);
    w->slot_best.assign(kHashSize, -1);
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
    std::vector<int> fracs = {8, 38, 68, 98};
    fracs.insert(fracs.end(), std::max(opt.extra_rounds, 0), 127);
    fracs.push_back(128);
    for (int frac : fracs) {
        fill(w->matcher, nsym, sym_val + kCodeBase, sym_len + kCodeBase);
        std::fill(count1, count1 + kNCodes, 0);
        const Round r = compress_count(s, size, soffs, nlines, frac, w->matcher, count1, *w);
        if (r.gain >= best_gain) {
            best_gain = r.gain;
            std::copy(sym_val, sym_val + kNCodes, best_val);
            std::copy(sym_len, sym_len + kNCodes, best_len);
            std::copy(count1, count1 + kNCodes, best_count1);
            best_nsym = nsym;
        }
        if (frac < 128) {
            nsym = next_table(frac, sym_val, sym_len, nsym, count1, r.ntouched, opt.min_count,
                              opt.single_weight, *w);
        }
    }
    const int n = next_table(128, best_val, best_len, best_nsym, best_count1, 0, opt.min_count,
                             opt.single_weight, *w);
    Symbols out;
    out.values.assign(best_val + kCodeBase, best_val + kCodeBase + n);
    out.lengths.resize(n);
    for (int i = 0; i < n; ++i) out.lengths[i] = static_cast<uint8_t>(best_len[kCodeBase + i]);
    return out;
}

}  // namespace

Sample sample_of(const uint8_t* data, const int64_t* offsets, int64_t lo, int64_t hi,
                 int64_t target, uint64_t seed) {
    Sample out;
    if (offsets[hi] - offsets[lo] < target) {
        out.bytes.assign(data + offsets[lo], data + offsets[hi]);
        out.offsets.resize(size_t(hi - lo + 1));
        for (int64_t i = lo; i <= hi; ++i) out.offsets[i - lo] = offsets[i] - offsets[lo];
        return out;
    }
    // at least target bytes in lo:hi, so the skip over empty strings below terminates
    const int64_t n = hi - lo;
    out.bytes.resize(size_t(target + kSampleLine - 1));
    out.offsets.push_back(0);
    int64_t filled = 0;
    uint64_t state = seed;
    while (filled < target) {
        state = mix(state);
        int64_t line = lo + int64_t(state % uint64_t(n));
        while (offsets[line + 1] == offsets[line]) {  // skip empty strings
            if (++line == hi) line = lo;
        }
        const int64_t ln = offsets[line + 1] - offsets[line];
        state = mix(state);
        const int64_t start =
            kSampleLine * int64_t(state % uint64_t(1 + (ln - 1) / kSampleLine));
        const int64_t take = std::min(ln - start, kSampleLine);
        std::memcpy(out.bytes.data() + filled, data + offsets[line] + start, size_t(take));
        filled += take;
        out.offsets.push_back(filled);
    }
    out.bytes.resize(size_t(filled));
    return out;
}

Symbols train_sample(const uint8_t* bytes, const int64_t* offsets, int64_t nstrings,
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

Symbols train_range(const uint8_t* data, const int64_t* offsets, int64_t lo, int64_t hi,
                    int64_t target, uint64_t seed, const TrainOptions& options) {
    if (offsets[hi] - offsets[lo] < target) {
        return train_sample(data + offsets[lo], offsets + lo, hi - lo, options);
    }
    const Sample s = sample_of(data, offsets, lo, hi, target, seed);
    return train_sample(s.bytes.data(), s.offsets.data(),
                        static_cast<int64_t>(s.offsets.size()) - 1, options);
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
    auto w = std::make_unique<Work<uint16_t>>();
    w->cval.resize(kNCodes);
    w->clen.resize(kNCodes);
    w->cgain.resize(kNCodes);
    w->pick.resize(kNCodes);
    w->slot_best.assign(kHashSize, -1);
    const int n = next_table(128, sym_val, sym_len, nsym, count1, 0, min_count, single_weight,
                             *w);
    Symbols out;
    out.values.assign(sym_val + kCodeBase, sym_val + kCodeBase + n);
    out.lengths.assign(sym_len + kCodeBase, sym_len + kCodeBase + n);
    return out;
}

}  // namespace fsstgpu_native
