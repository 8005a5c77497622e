// The plain decode loop of decode_all (decode.cpp): codes[start:end] into out[out_pos:out_end],
// writing nowhere else; the output end, or -1 for an unknown code (length 0), an escape as the
// last code, or an overflow. Included by decode.cpp only.
//
// Eight codes at a time: one 8-byte load, one test for an escape among them, eight symbols
// written as unaligned 8-byte stores at positions from a prefix sum of their lengths (so the
// only chain from one group to the next is one add). A group with an escape decodes the codes
// before it and the escape, then goes on from there. With Known (every code's symbol is known
// to exist: the table has 255 symbols, or no code byte of the run is one the table lacks) the
// loop skips the length-0 test.
#pragma once

#include <cstdint>
#include <cstring>

#include "matcher.h"

namespace fsstgpu_native {
namespace plain {

inline uint64_t load64(const uint8_t* p) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    return w;
}

inline void store64(uint8_t* p, uint64_t w) { std::memcpy(p, &w, 8); }

// The 0x80 bit of each byte of w that is 0xFF, exact up to the first one (the zero-byte test on
// ~w: a borrow may mark bytes above a true one, never one below it).
inline uint64_t escapes(uint64_t w) {
    const uint64_t x = ~w;
    return (x - 0x0101010101010101ull) & ~x & 0x8080808080808080ull;
}

// Whether a byte of codes[start:end] is a code in [lo, 255): one a table of lo symbols lacks.
inline bool has_unknown(const uint8_t* codes, int64_t start, int64_t end, int lo) {
    if (lo >= kMaxSymbols) return false;
    const uint8_t base = static_cast<uint8_t>(lo), span = static_cast<uint8_t>(kMaxSymbols - lo);
    uint8_t found = 0;
    for (int64_t i = start; i < end; ++i) {  // byte arithmetic: a loop the compiler vectorises
        found |= static_cast<uint8_t>(static_cast<uint8_t>(codes[i] - base) < span);
    }
    return found != 0;
}

template <bool Known>
inline int64_t decode_run(const uint8_t* codes, int64_t start, int64_t end,
                          const uint64_t* packed, const uint8_t* lens, uint8_t* out,
                          int64_t out_pos, int64_t out_end, int64_t store_end) {
    int64_t i = start;
    int64_t o = out_pos;
    // Eight symbols of at most 8 bytes: 64 bytes of room before store_end make every 8-byte
    // store safe. An unknown code (length 0, word 0) is only reported after the stores.
    while (i + 8 <= end && o + 64 <= store_end) {
        const uint64_t w = load64(codes + i);
        const uint64_t esc = escapes(w);
        if (esc == 0) {
            // the codes from the word, every load before the first store: out may alias
            // nothing here, but the compiler cannot know it
            const unsigned c0 = w & 0xFF, c1 = (w >> 8) & 0xFF, c2 = (w >> 16) & 0xFF,
                           c3 = (w >> 24) & 0xFF, c4 = (w >> 32) & 0xFF, c5 = (w >> 40) & 0xFF,
                           c6 = (w >> 48) & 0xFF, c7 = w >> 56;
            const int64_t l0 = lens[c0], l1 = lens[c1], l2 = lens[c2], l3 = lens[c3];
            const int64_t l4 = lens[c4], l5 = lens[c5], l6 = lens[c6], l7 = lens[c7];
            const uint64_t s0 = packed[c0], s1 = packed[c1], s2 = packed[c2], s3 = packed[c3];
            const uint64_t s4 = packed[c4], s5 = packed[c5], s6 = packed[c6], s7 = packed[c7];
            const int64_t p1 = l0, p2 = l0 + l1, p3 = p2 + l2, p4 = p2 + (l2 + l3);
            const int64_t p5 = p4 + l4, p6 = p4 + (l4 + l5), p7 = p6 + l6;
            uint8_t* d = out + o;
            store64(d, s0);
            store64(d + p1, s1);
            store64(d + p2, s2);
            store64(d + p3, s3);
            store64(d + p4, s4);
            store64(d + p5, s5);
            store64(d + p6, s6);
            store64(d + p7, s7);
            if (!Known && ((l0 == 0) | (l1 == 0) | (l2 == 0) | (l3 == 0) | (l4 == 0) |
                           (l5 == 0) | (l6 == 0) | (l7 == 0))) {
                return -1;
            }
            o += p6 + (l6 + l7);
            i += 8;
            continue;
        }
        // the codes before the first escape, then the escape (its literal is inside the
        // eight bytes unless the escape is the last of them: then it waits for the next round)
        const int first = __builtin_ctzll(esc) >> 3;
        for (int j = 0; j < first; ++j) {
            const uint8_t c = codes[i + j];
            if (!Known && lens[c] == 0) return -1;
            store64(out + o, packed[c]);
            o += lens[c];
        }
        i += first;
        if (first < 7) {
            out[o++] = codes[i + 1];
            i += 2;
        }
    }
    // one code at a time with 8-byte stores while they stay inside the range
    while (i < end && o + 8 <= store_end) {
        const uint8_t c = codes[i];
        if (c != kEscape) {
            if (lens[c] == 0) return -1;
            store64(out + o, packed[c]);
            o += lens[c];
            ++i;
        } else {
            if (i + 1 >= end) return -1;
            out[o++] = codes[i + 1];
            i += 2;
        }
    }
    // tail: byte stores with exact bounds, so neighbouring ranges are never touched
    while (i < end) {
        const uint8_t c = codes[i];
        if (c != kEscape) {
            const int64_t ln = lens[c];
            if (ln == 0 || o + ln > out_end) return -1;
            const uint64_t sym = packed[c];
            std::memcpy(out + o, &sym, static_cast<size_t>(ln));
            o += ln;
            ++i;
        } else {
            if (i + 1 >= end || o >= out_end) return -1;
            out[o++] = codes[i + 1];
            i += 2;
        }
    }
    return o > out_end ? -1 : o;  // the loops above may run past out_end: an overflow all the same
}

// decode_run for a table of nsymbols symbols: without the length test when no code can lack
// its symbol.
inline int64_t decode(const uint8_t* codes, int64_t start, int64_t end, const uint64_t* packed,
                      const uint8_t* lens, int64_t nsymbols, uint8_t* out, int64_t out_pos,
                      int64_t out_end, int64_t store_end) {
    if (!has_unknown(codes, start, end, static_cast<int>(nsymbols))) {
        return decode_run<true>(codes, start, end, packed, lens, out, out_pos, out_end,
                                store_end);
    }
    return decode_run<false>(codes, start, end, packed, lens, out, out_pos, out_end, store_end);
}

}  // namespace plain
}  // namespace fsstgpu_native
