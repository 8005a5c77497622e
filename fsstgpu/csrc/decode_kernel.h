// The plain decode loop of decode_all (decode.cpp): codes[start:end] into out[out_pos:out_end],
// writing nowhere else; the output end, or -1 for an unknown code (length 0), an escape as the
// last code, or an overflow. Included by decode.cpp only.
//
// Sixteen codes a round: two 8-byte loads, one test for an escape among them, sixteen symbols
// written as unaligned 8-byte stores, each where the one before ended. A round with an escape
// decodes the codes before it and the escape, then goes on from there. With Known (every
// code's symbol is known to exist: the table has 255 symbols, or no code byte of the run is one
// the table lacks) the loop skips the length-0 test. literals gathers (ORs) the escaped bytes
// written: with a table of ASCII symbols, a run whose literals are ASCII decoded to ASCII
// (decode.cpp then skips its UTF-8 check).
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

// One code: its symbol stored as an 8-byte word at d, d moved past it (a length-0 code, one the
// table lacks, is noted in bad unless Known).
template <bool Known>
inline void put(unsigned code, const uint64_t* packed, const uint8_t* lens, uint8_t*& d,
                bool& bad) {
    const unsigned len = lens[code];
    store64(d, packed[code]);
    d += len;
    if (!Known) bad |= len == 0;
}

template <bool Known>
inline int64_t decode_run(const uint8_t* codes, int64_t start, int64_t end,
                          const uint64_t* packed, const uint8_t* lens, uint8_t* out,
                          int64_t out_pos, int64_t out_end, int64_t store_end,
                          uint8_t& literals) {
    // Sixteen codes a round while none is an escape, each symbol stored where the one before
    // ended: one add a code is the only chain, and pointers rather than indices keep every
    // live value in a register (the eight-wide prefix sums this replaced spilled, 2.8 -> 4.5
    // GB/s on dbtext). Sixteen symbols of at most 8 bytes: 128 bytes of room before store_end
    // make every store safe; an unknown code is only reported after the stores.
    const uint8_t* c = codes + start;
    const uint8_t* const c_end = codes + end;
    uint8_t* d = out + out_pos;
    bool bad = false;
    if (store_end - out_pos >= 128) {
        uint8_t* const d_fast = out + (store_end - 128);
        while (c_end - c >= 16 && d <= d_fast) {
            const uint64_t w0 = load64(c), w1 = load64(c + 8);
            if (__builtin_expect((escapes(w0) | escapes(w1)) == 0, 1)) {
                for (int j = 0; j < 64; j += 8) put<Known>((w0 >> j) & 0xFF, packed, lens, d, bad);
                for (int j = 0; j < 64; j += 8) put<Known>((w1 >> j) & 0xFF, packed, lens, d, bad);
                if (!Known && bad) return -1;
                c += 16;
                continue;
            }
            // the codes before the first escape, then the escape (its literal is inside the
            // sixteen bytes: an escape of the second word waits for the next round)
            const uint64_t e0 = escapes(w0);
            const int first = e0 ? __builtin_ctzll(e0) >> 3 : 8;
            for (int j = 0; j < first; ++j) put<Known>(c[j], packed, lens, d, bad);
            if (!Known && bad) return -1;
            c += first;
            if (first < 8) {
                literals |= c[1];
                *d++ = c[1];
                c += 2;
            }
        }
    }
    int64_t i = c - codes;
    int64_t o = d - out;
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
            literals |= codes[i + 1];
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
            literals |= codes[i + 1];
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
                      int64_t out_end, int64_t store_end, uint8_t& literals) {
    if (!has_unknown(codes, start, end, static_cast<int>(nsymbols))) {
        return decode_run<true>(codes, start, end, packed, lens, out, out_pos, out_end,
                                store_end, literals);
    }
    return decode_run<false>(codes, start, end, packed, lens, out, out_pos, out_end, store_end,
                             literals);
}

}  // namespace plain
}  // namespace fsstgpu_native
