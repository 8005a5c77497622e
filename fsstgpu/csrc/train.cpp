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

#include "layout.h"
#include "matcher.h"
#include "train_round.h"

namespace fsstgpu_native {

namespace {

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

// Pieces of strings lo:hi spread evenly until about `want` bytes (raw >= want >= 1 bytes in
// all) into dst (room for want + kDrawSlack bytes: the last piece can overshoot, and 8 bytes
// of slack are zeroed after it), their ends after offsets' 0; returns the bytes taken. Every
// string is cut into pieces of kSampleLine bytes; a piece is taken when it reaches past a
// mark that each taken piece moves on by its length * raw / want, so the pieces are spread
// over the range by bytes, none taken twice. (Random draws from a range only a few times
// the sample repeat strings: a sample as large as the range holds 63% of its bytes.)
int64_t spread_sample(const uint8_t* data, const int64_t* offsets, int64_t lo, int64_t hi,
                      int64_t want, uint8_t* dst, std::vector<int64_t>& out_offsets) {
    const int64_t base = offsets[lo];
    const __int128 raw = offsets[hi] - base;
    out_offsets.assign(1, 0);
    int64_t filled = 0;
    __int128 mark = 0;  // in bytes * want (exact: no rounding to drift over a long range)
    for (int64_t i = lo; i < hi && filled < want; ++i) {
        const int64_t end = offsets[i + 1];
        for (int64_t at = offsets[i]; at < end && filled < want; at += kSampleLine) {
            const int64_t take = std::min(end - at, kSampleLine);
            const __int128 reach = __int128(at - base + take) * want;
            if (reach <= mark) continue;
            std::memcpy(dst + filled, data + at, size_t(take));
            filled += take;
            out_offsets.push_back(filled);
            mark = std::max(mark + __int128(take) * raw, reach);
        }
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

int64_t spread_bytes(int64_t raw, int64_t target) {
    const double x = static_cast<double>(target) / static_cast<double>(raw);  // in (0, 1]
    // 1 - e^(-x) by its series, which 18 terms sum to double precision for x <= 1, and which
    // (unlike the C library's exp) gives the same sample size, so the same table, everywhere
    double term = x, sum = 0.0;
    for (int k = 1; k <= 18; ++k) {
        sum += term;
        term *= -x / (k + 1);
    }
    return std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(raw) * sum));
}

// Whether strings of raw bytes are sampled evenly for a target (raw >= target): fewer than
// kSpreadRange samples' bytes (the division keeps a huge target from overflowing).
inline bool spread_range(int64_t raw, int64_t target) { return raw / kSpreadRange < target; }

int64_t sample_into(const uint8_t* data, const int64_t* offsets, int64_t lo, int64_t hi,
                    int64_t target, uint64_t seed, Sample& out, bool spread) {
    const int64_t raw = offsets[hi] - offsets[lo];
    if (raw >= target && spread && spread_range(raw, target)) {
        const int64_t want = spread_bytes(raw, target);
        if (out.bytes.size() < size_t(want + kDrawSlack)) {
            out.bytes.resize(size_t(want + kDrawSlack));
        }
        return spread_sample(data, offsets, lo, hi, want, out.bytes.data(), out.offsets);
    }
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
                 int64_t target, uint64_t seed, bool spread) {
    Sample out;
    out.bytes.resize(size_t(sample_into(data, offsets, lo, hi, target, seed, out, spread)));
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
    const int64_t raw = offsets[hi] - offsets[lo];
    if (raw < target) return train_sample(data + offsets[lo], offsets + lo, hi - lo, options);
    SampleScratch& scratch = SampleScratch::of_this_thread();
    if (options.spread && spread_range(raw, target)) {
        const int64_t want = spread_bytes(raw, target);
        spread_sample(data, offsets, lo, hi, want, scratch.bytes.grow(size_t(want + kDrawSlack)),
                      scratch.offsets);
    } else {
        draw_sample(data, offsets, lo, hi, target, seed,
                    scratch.bytes.grow(size_t(target + kDrawSlack)), scratch.offsets);
    }
    return train_padded(scratch.bytes.p.get(), scratch.offsets.data(),
                        static_cast<int64_t>(scratch.offsets.size()) - 1, options);
}

void check_extra_rounds(int extra_rounds) {
    if (extra_rounds < 0 || extra_rounds > 64) {
        throw std::invalid_argument("extra_rounds must be 0-64, not " +
                                    std::to_string(extra_rounds));
    }
}

void check_train_range(int64_t size, const int64_t* offsets, int64_t n, int64_t lo, int64_t hi,
                       int64_t target, int threads) {
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
    if (first_decrease(offsets + lo, hi - lo + 1, threads) >= 0) {
        throw std::invalid_argument("offsets must be non-decreasing and inside data");
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
