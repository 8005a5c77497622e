// The kernels' bodies, included once per instruction set. The including file defines
//   FSSTGPU_ISA_NS     the namespace of this copy (scalar, avx2, avx512),
//   FSSTGPU_TARGET     the target attribute every function here gets (empty for scalar),
//   FSSTGPU_ISA_LEVEL  0, 1 (AVX2) or 2 (AVX-512), for the few explicitly vector loops.
// Everything here has internal linkage and uses no library templates: a copy compiled for
// AVX-512 must never be picked by the linker for a call from another copy (an ODR merge of an
// inline function would run AVX-512 code on a CPU without it).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#if FSSTGPU_ISA_LEVEL > 0
#include <immintrin.h>
#endif

#include "kernels.h"

namespace fsstgpu_native {
namespace FSSTGPU_ISA_NS {
namespace {

constexpr uint64_t kHighBits = 0x8080808080808080ull;

FSSTGPU_TARGET inline uint64_t load64(const uint8_t* p) {
    uint64_t w;
    std::memcpy(&w, p, 8);  // one unaligned load
    return w;
}

// matcher.h's hash3, in 32 bits: the slot only uses bits 0-26 of the product
FSSTGPU_TARGET inline int64_t slot(uint64_t word) {
    const uint32_t p = static_cast<uint32_t>(word & 0xFFFFFF) * static_cast<uint32_t>(kHashPrime);
    return static_cast<int64_t>((p ^ (p >> 15)) & (kHashSize - 1));
}

// The low n bytes of word (1 <= n <= 8).
FSSTGPU_TARGET inline uint64_t low_bytes(uint64_t word, int64_t n) {
#if FSSTGPU_ISA_LEVEL > 0
    return _bzhi_u64(word, static_cast<unsigned>(8 * n));
#else
    const int sh = static_cast<int>(64 - 8 * n);
    return (word << sh) >> sh;
#endif
}

// data[pos:min(pos + 8, end)] as a little-endian word, zero beyond end; never reads past size.
FSSTGPU_TARGET inline uint64_t load_word(const uint8_t* data, int64_t pos, int64_t end,
                                         int64_t size) {
    int64_t rem = end - pos;
    if (pos + 8 <= size) {
        uint64_t w = load64(data + pos);
        return rem < 8 ? w & ((uint64_t(1) << (8 * rem)) - 1) : w;
    }
    uint64_t w = 0;
    for (int64_t j = 0; j < rem && j < 8; ++j) w |= uint64_t(data[pos + j]) << (8 * j);
    return w;
}

// ---- encoder: greedy longest match, the numba kernel's loop (fsstgpu/encoder.py) ----

// One string after another, walking hash chains: any table, and the strings near the data's end.
FSSTGPU_TARGET int64_t encode_chained(const uint8_t* data, int64_t size, const int64_t* offsets,
                                      int64_t lo, int64_t hi, const Matcher& m, uint8_t* codes,
                                      int64_t out0, int64_t* code_offsets) {
    int64_t out = out0;
    for (int64_t i = lo; i < hi; ++i) {
        code_offsets[i] = out;
        int64_t pos = offsets[i];
        const int64_t end = offsets[i + 1];
        // 8 whole bytes left in the string: no length checks needed
        while (pos + 8 <= end) {
            const uint64_t word = load64(data + pos);
            const int32_t cl = m.short_code[word & 0xFFFF];
            if (cl & kLongFlag) {
                int32_t e = m.hhead[slot(word)];
                while (e >= 0) {
                    if (low_bytes(word, m.ecl[e] >> 8) == m.ekey[e]) break;
                    e = m.enext[e];
                }
                if (e >= 0) {
                    codes[out++] = static_cast<uint8_t>(m.ecl[e] & 0xFF);
                    pos += m.ecl[e] >> 8;
                    continue;
                }
            }
            const int c = cl & 0xFF;
            // branch-free escape: always write the literal, step over it only for an escape
            codes[out] = static_cast<uint8_t>(c);
            codes[out + 1] = static_cast<uint8_t>(word);
            out += 1 + (c == kEscape);
            pos += (cl >> 8) & 0xF;
        }
        // the last 1-7 bytes
        while (pos < end) {
            const int64_t rem = end - pos;
            const uint64_t word = load_word(data, pos, end, size);
            if (rem >= 3) {
                int32_t e = m.hhead[slot(word)];
                while (e >= 0) {
                    const int64_t ln = m.ecl[e] >> 8;
                    if (ln <= rem && low_bytes(word, ln) == m.ekey[e]) break;
                    e = m.enext[e];
                }
                if (e >= 0) {
                    codes[out++] = static_cast<uint8_t>(m.ecl[e] & 0xFF);
                    pos += m.ecl[e] >> 8;
                    continue;
                }
            }
            const int32_t cl = rem >= 2 ? m.short_code[word & 0xFFFF] : m.byte_code[word & 0xFF];
            const int c = cl & 0xFF;
            codes[out] = static_cast<uint8_t>(c);
            codes[out + 1] = static_cast<uint8_t>(word);
            out += 1 + (c == kEscape);
            pos += (cl >> 8) & 0xF;
        }
    }
    return out;
}

#include "encode_lanes_impl.h"
#include "encode_jobs_impl.h"

// The first string at or past byte target (offsets sorted), in lo:hi.
FSSTGPU_TARGET inline int64_t string_at(const int64_t* offsets, int64_t lo, int64_t hi,
                                        int64_t target) {
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (offsets[mid] < target) lo = mid + 1; else hi = mid;
    }
    return lo;
}

#if defined(__x86_64__) || defined(__i386__)
FSSTGPU_TARGET inline uint64_t ticks() { return __builtin_ia32_rdtsc(); }
#endif

// Which loop is faster depends on the text and the CPU. The AVX-512 job kernel beat the others
// on every text measured (dbtext, Python source lines, /usr paths), from calls of about
// kJobMinBytes up (the planner's 4 KB probes included: 6% of plan_blocks on dbtext); below
// that its queue is too short to fill lanes. How it loads depends on the CPU (cpu.h's
// fast_gathers): on an AMD Zen 4, whose gathers issue for ~15 cycles each, scalar loads
// through the stack were 13-50% faster on each dbtext file; on the H200 host's Intel Xeon the
// gathers were 45% faster (FSSTGPU_ENCODER=gather / vector force one; timing both on 16 KB
// pieces picked the gathers on a quarter of the calls on the AMD box, from noise, so kAuto
// does not time them). Without AVX-512 the lanes' branch-free steps win where the choice
// between a long and a short symbol is erratic, the chained loop's branches where it is
// regular (speculation then runs ahead): a large call times both on a first piece of its
// strings and the faster one encodes the rest. All give the same codes.
constexpr int64_t kProbeBytes = 16 << 10;
constexpr int64_t kJobMinBytes = 2 << 10;

#if defined(__x86_64__) || defined(__i386__)
// cost = ticks per byte of strings from:to encoded by call (which returns the new out).
#define FSSTGPU_TIMED(cost, call, from, to)                                                 \
    {                                                                                      \
        const uint64_t t0 = ticks();                                                       \
        out = call;                                                                        \
        const int64_t n = offsets[to] - offsets[from];                                     \
        cost = static_cast<double>(ticks() - t0) / static_cast<double>(n > 0 ? n : 1);     \
    }
#endif

FSSTGPU_TARGET int64_t encode(const uint8_t* data, int64_t size, const int64_t* offsets,
                              int64_t lo, int64_t hi, const Matcher& m, const LaneTable* t,
                              int loop, uint8_t* codes, int64_t out0, int64_t* code_offsets) {
    if (t == nullptr || loop == kChained) {
        return encode_chained(data, size, offsets, lo, hi, m, codes, out0, code_offsets);
    }
    const int64_t base = offsets[lo];
    const int64_t span = offsets[hi] - base;
#if FSSTGPU_ISA_LEVEL >= 2
    const bool jobs = loop == kAuto && span >= kJobMinBytes;
    if (loop == kGather || (jobs && fast_gathers())) {
        return encode_jobs<true>(data, size, offsets, lo, hi, m, *t, codes, out0, code_offsets);
    }
    if (loop == kVector || jobs) {
        return encode_jobs<false>(data, size, offsets, lo, hi, m, *t, codes, out0, code_offsets);
    }
#endif
    int64_t out = out0;
    bool lanes = true;
#if defined(__x86_64__) || defined(__i386__)
    if (FSSTGPU_ISA_LEVEL < 2 && loop == kAuto && span >= 4 * 2 * kProbeBytes) {
        const int64_t mid = string_at(offsets, lo, hi, base + kProbeBytes);
        const int64_t cut = string_at(offsets, mid, hi, base + 2 * kProbeBytes);
        double chained = 0, laned = 0;
        FSSTGPU_TIMED(chained, encode_chained(data, size, offsets, lo, mid, m, codes, out,
                                              code_offsets), lo, mid)
        FSSTGPU_TIMED(laned, encode_lanes(data, size, offsets, mid, cut, m, *t, codes, out,
                                          code_offsets), mid, cut)
        lanes = laned <= chained;
        lo = cut;
    }
#endif
    if (!lanes) return encode_chained(data, size, offsets, lo, hi, m, codes, out, code_offsets);
    return encode_lanes(data, size, offsets, lo, hi, m, *t, codes, out, code_offsets);
}
#undef FSSTGPU_TIMED

// ---- UTF-8 (fsstgpu/utf8.py): strings checked as one stream, in runs of about 64 KB ----

constexpr int64_t kRunBytes = 64 << 10;

// The first byte of data[i:end] with its high bit set, or end.
FSSTGPU_TARGET inline int64_t ascii_end(const uint8_t* data, int64_t i, int64_t end) {
#if FSSTGPU_ISA_LEVEL >= 2
    while (i + 64 <= end) {
        const uint64_t high = _mm512_movepi8_mask(_mm512_loadu_si512(data + i));
        if (high) return i + __builtin_ctzll(high);
        i += 64;
    }
#elif FSSTGPU_ISA_LEVEL >= 1
    while (i + 32 <= end) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(data + i));
        const uint32_t high = static_cast<uint32_t>(_mm256_movemask_epi8(v));
        if (high) return i + __builtin_ctz(high);
        i += 32;
    }
#endif
    while (i + 8 <= end) {
        const uint64_t high = load64(data + i) & kHighBits;
        if (high) return i + __builtin_ctzll(high) / 8;
        i += 8;
    }
    while (i < end && data[i] < 0x80) ++i;
    return i;
}

// The automaton's state after data[i:end] from state; *high is set on a non-ASCII byte.
FSSTGPU_TARGET inline uint64_t stream_state(const uint8_t* data, int64_t i, int64_t end,
                                            const uint64_t* dfa, uint64_t state, bool* high) {
    while (i < end) {
        if (state == 0) {
            i = ascii_end(data, i, end);  // between characters: skip ASCII
            if (i == end) break;
        }
        *high = true;
        // step while inside a character or while non-ASCII bytes follow (CJK text stays here)
        do {
            state = (dfa[data[i]] >> state) & 63;
            ++i;
        } while (i < end && (state != 0 || data[i] >= 0x80) && state != 6);
        if (state == 6) return state;
    }
    return state;
}

// Whether data[i:end] is one valid stream of characters. A lone automaton waits on each step
// (the shift by the state), so non-ASCII text (CJK) runs as two interleaved streams: the second
// starts at the first byte after the middle that is no continuation byte (a character start
// in a valid stream; more than three continuation bytes in a row are invalid anyway).
FSSTGPU_TARGET inline bool stream_valid(const uint8_t* data, int64_t i, int64_t end,
                                        const uint64_t* dfa, bool* high) {
    int64_t mid = i + (end - i) / 2;
    int skipped = 0;
    while (mid < end && (data[mid] & 0xC0) == 0x80 && skipped < 4) {
        ++mid;
        ++skipped;
    }
    if (skipped == 4) {
        *high = true;
        return false;
    }
    int64_t a = i, b = mid;
    uint64_t sa = 0, sb = 0;
    for (;;) {
        if (sa == 0 && a < mid && data[a] < 0x80) a = ascii_end(data, a, mid);
        if (sb == 0 && b < end && data[b] < 0x80) b = ascii_end(data, b, end);
        if (a + 8 > mid || b + 8 > end) break;
        *high = true;
        const uint64_t wa = load64(data + a), wb = load64(data + b);
        for (int j = 0; j < 8; ++j) {  // the table loads do not wait: only the shifts do
            sa = (dfa[(wa >> (8 * j)) & 0xFF] >> sa) & 63;
            sb = (dfa[(wb >> (8 * j)) & 0xFF] >> sb) & 63;
        }
        a += 8;
        b += 8;
        if (sa == 6 || sb == 6) return false;
    }
    return stream_state(data, a, mid, dfa, sa, high) == 0 &&
           stream_state(data, b, end, dfa, sb, high) == 0;
}

template <class Off>
FSSTGPU_TARGET int64_t first_invalid(const uint8_t* data, const Off* offsets, int64_t lo,
                                     int64_t hi, const uint64_t* dfa) {
    // A run is valid exactly when its bytes are one valid stream and no string starts on a
    // continuation byte; only a failed run is checked string by string, to name the first.
    int64_t k = lo;
    while (k < hi) {
        const int64_t start = offsets[k];
        int64_t a = k + 1, j = hi;  // the first string ending kRunBytes or more past start
        while (a < j) {
            const int64_t mid = a + (j - a) / 2;
            if (int64_t(offsets[mid]) - start >= kRunBytes) j = mid; else a = mid + 1;
        }
        const int64_t end = offsets[j];
        bool high = false;
        bool ok = stream_valid(data, start, end, dfa, &high);
        for (int64_t s = k + 1; ok && high && s < j; ++s) {
            const int64_t p = offsets[s];
            ok = p >= end || (data[p] & 0xC0) != 0x80;
        }
        if (!ok) {
            for (int64_t s = k; s < j; ++s) {
                bool unused = false;
                if (stream_state(data, offsets[s], offsets[s + 1], dfa, 0, &unused) != 0) {
                    return s;
                }
            }
        }
        k = j;
    }
    return -1;
}

FSSTGPU_TARGET int64_t utf8_32(const uint8_t* data, const int32_t* offsets, int64_t lo,
                               int64_t hi, const uint64_t* dfa) {
    return first_invalid(data, offsets, lo, hi, dfa);
}

FSSTGPU_TARGET int64_t utf8_64(const uint8_t* data, const int64_t* offsets, int64_t lo,
                               int64_t hi, const uint64_t* dfa) {
    return first_invalid(data, offsets, lo, hi, dfa);
}

template <class Out>
FSSTGPU_TARGET uint64_t narrow_to(const int64_t* __restrict in, int64_t lo, int64_t hi,
                                  Out* __restrict out) {
    uint64_t acc = 0;  // one pass: the OR tells the caller whether Out held every value
    for (int64_t i = lo; i < hi; ++i) {
        const uint64_t v = static_cast<uint64_t>(in[i]);
        acc |= v;
        out[i] = static_cast<Out>(v);
    }
    return acc;
}

FSSTGPU_TARGET uint64_t narrow(const int64_t* in, int64_t lo, int64_t hi, void* out,
                               int width) {
    switch (width) {
        case 1: return narrow_to(in, lo, hi, static_cast<uint8_t*>(out));
        case 2: return narrow_to(in, lo, hi, static_cast<uint16_t*>(out));
        case 4: return narrow_to(in, lo, hi, static_cast<uint32_t*>(out));
        default: return narrow_to(in, lo, hi, static_cast<uint64_t*>(out));
    }
}

}  // namespace

const Kernels table = {encode, utf8_32, utf8_64, narrow};

}  // namespace FSSTGPU_ISA_NS
}  // namespace fsstgpu_native
