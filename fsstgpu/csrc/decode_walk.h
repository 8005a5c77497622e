// The decode walk that also checks the string ends (fsstgpu/decoder.py's contract for
// decode_all with string_ends): no symbol or escape may run across a string's end, and stored
// code offsets must be where the strings' codes start. Included by decode.cpp only.
//
// Each symbol's start is noted in a window's scratch and the ends are checked a window at a
// time: the symbol loop stays the plain decoder's (eight codes at a time while none is an
// escape), plus one store a symbol, with no branch per string. Without code offsets the note is
// a mark: an 8-byte word holding 1 stored at the symbol's start, as its bytes are stored in the
// output, so each symbol clears the rest of its span and every byte of a window is written in
// it (no clearing, no stale entry); an end must fall on a 1. With code offsets the note is the
// symbol's code position (8 bytes an output byte, eight times the marks' footprint: a window's
// scratch then fills the L1 cache). A split's answer (which error, at which string end) depends
// only on the window rule below, so the eight-code steps change the speed, never the answer.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "decode_kernel.h"
#include "matcher.h"

namespace fsstgpu_native {
namespace walk {

// Output bytes per window: its scratch stays in the L1 cache (8 bytes an output byte with code
// positions, 1 with marks).
template <bool Offsets>
constexpr int64_t kWindow = Offsets ? 4096 : 16384;
// Scratch entries: a window's symbols start below kWindow, its tail runs at most 15 bytes on
// (and a mark's 8-byte store 7 more).
constexpr int64_t kStarts = kWindow<true> + 16;
constexpr int64_t kMarks = kWindow<false> + 24;
// Statuses of a split the walk rejects (a non-negative one is its output end).
constexpr int64_t kCorrupt = -1, kCrosses = -2, kOffset = -3;

using plain::store64;

// The word of a mark: its first byte in memory 1, the next seven 0.
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
constexpr uint64_t kMark = uint64_t(1) << 56;
#else
constexpr uint64_t kMark = 1;
#endif

// A window's notes of where symbols start (the header). Offsets: starts[p - base] holds the
// code position of the symbol that started at output p when one did in this window (positions
// >= wcode; anything else there is older; kStarts entries, none at or after the walk's start
// on entry). Otherwise marks[p - base] is 1 exactly where a symbol of this window started, for
// every p below the window's output end (kMarks bytes, any content on entry).
template <bool Offsets>
struct Notes {
    int64_t* starts;
    uint8_t* marks;

    inline void note(int64_t p, int64_t i) const {
        if constexpr (Offsets) {
            starts[p] = i;
        } else {
            (void)i;
            store64(marks + p, kMark);
        }
    }
};

// Check the string ends ends[row:] up to output o (code position i) of a window that began at
// output base, code wcode; row moves past every end that passed. An end must be a symbol's
// start (else kCrosses) and, with code offsets, at its code offset (else kOffset).
template <class Off, bool Offsets>
inline int64_t check_ends(const Off* ends, int64_t nends, const int64_t* code_offsets,
                          int64_t& row, int64_t o, int64_t i, int64_t base, int64_t wcode,
                          const Notes<Offsets>& notes) {
    while (row < nends && int64_t(ends[row]) <= o) {
        const int64_t e = ends[row];
        if constexpr (Offsets) {
            const int64_t pos = e == o ? i : notes.starts[e - base];
            if (pos < wcode) return kCrosses;
            if (code_offsets[row] != pos) return kOffset;
        } else {
            (void)code_offsets, (void)i, (void)wcode;
            if (e != o && notes.marks[e - base] != 1) return kCrosses;
        }
        ++row;
    }
    return 0;
}

// Decode codes[start:end] into out[out_pos:out_end] checking the string ends (nends of them,
// ends[row] the first after out_pos); return the output end or a negative status, and leave in
// row the end it stopped at. Offsets: code_offsets is given (notes.starts), else null
// (notes.marks). Known: no code of the run lacks its symbol (decode_kernel.h's
// plain::has_unknown). literals gathers (ORs) the escaped bytes written, for the UTF-8 check's
// ASCII test (decode.cpp).
template <class Off, bool Known, bool Offsets>
inline int64_t decode_checked(const uint8_t* codes, int64_t start, int64_t end,
                              const uint64_t* packed, const uint8_t* lens, uint8_t* out,
                              int64_t out_pos, int64_t out_end, const Off* ends, int64_t nends,
                              const int64_t* code_offsets, int64_t& row,
                              const Notes<Offsets>& notes, uint8_t& literals) {
    int64_t i = start;
    int64_t o = out_pos;
    const int64_t fast_end = out_end - 8;
    int64_t base = o, wcode = i;  // the current window's output and code start
    for (;;) {
        const int64_t lim = std::min(fast_end + 1, base + kWindow<Offsets>);
        // Eight codes at a time while all eight start below lim (so each is a code the one-
        // at-a-time loop would take too) and their 8-byte stores stay in the range.
        while (i + 8 <= end && o + 56 < lim) {
            const uint64_t w = plain::load64(codes + i);
            const uint64_t esc = plain::escapes(w);
            if (esc == 0) {
                // each symbol where the one before ended, its start noted: one add a code is
                // the only chain (the eight-wide prefix sums this replaced spilled:
                // decode_kernel.h's rounds)
                uint8_t* const ob = out + base;
                int64_t p = o - base;
                bool bad = false;
                for (int j = 0; j < 8; ++j) {
                    const unsigned c = (w >> (8 * j)) & 0xFF;
                    const unsigned len = lens[c];
                    notes.note(p, i + j);
                    store64(ob + p, packed[c]);
                    p += len;
                    if (!Known) bad |= len == 0;
                }
                if (!Known && bad) return kCorrupt;
                o = base + p;
                i += 8;
                continue;
            }
            // the codes before the first escape, then the escape (unless it is the eighth:
            // its literal may lie past the eight bytes)
            const int first = __builtin_ctzll(esc) >> 3;
            for (int j = 0; j < first; ++j) {
                const uint8_t c = codes[i];
                if (!Known && lens[c] == 0) return kCorrupt;
                notes.note(o - base, i);
                store64(out + o, packed[c]);
                o += lens[c];
                ++i;
            }
            if (first < 7) {
                notes.note(o - base, i);
                literals |= codes[i + 1];
                out[o++] = codes[i + 1];
                i += 2;
            }
        }
        // One code at a time, 8-byte stores while they stay inside the range.
        while (i < end && o < lim) {
            notes.note(o - base, i);
            const uint8_t c = codes[i];
            if (c != kEscape) {
                if (lens[c] == 0) return kCorrupt;
                store64(out + o, packed[c]);
                o += lens[c];
                ++i;
            } else {
                if (i + 1 >= end) return kCorrupt;
                literals |= codes[i + 1];
                out[o++] = codes[i + 1];
                i += 2;
            }
        }
        if (i < end && o > fast_end) {
            // Tail: byte stores with exact bounds (fewer than 16 bytes past the window).
            while (i < end) {
                notes.note(o - base, i);
                const uint8_t c = codes[i];
                if (c != kEscape) {
                    const int64_t ln = lens[c];
                    if (ln == 0 || o + ln > out_end) return kCorrupt;
                    const uint64_t sym = packed[c];
                    std::memcpy(out + o, &sym, static_cast<size_t>(ln));
                    o += ln;
                    ++i;
                } else {
                    if (i + 1 >= end || o >= out_end) return kCorrupt;
                    literals |= codes[i + 1];
                    out[o++] = codes[i + 1];
                    i += 2;
                }
            }
        }
        const int64_t status = check_ends(ends, nends, code_offsets, row, o, i, base, wcode,
                                          notes);
        if (status) return status;
        if (i >= end) return o;
        base = o;
        wcode = i;
    }
}

}  // namespace walk
}  // namespace fsstgpu_native
