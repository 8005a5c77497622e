// The O(strings) checks of a compressed column (fsstgpu/checks.py's kernels) and the first-index
// search they share with layout.cpp: chunks of a range searched in parallel, the lowest hit
// reported, so the answer is the serial loop's whatever the thread count.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "parallel.h"

namespace fsstgpu_native {

constexpr int64_t kTaskItems = (1 << 18) / kTaskSizeDivisor;  // array entries per task, about
// below this many entries (a few ms) one thread: starting and joining helpers on a busy
// machine costs more than they save
constexpr int64_t kParallelItems = (1 << 21) / kTaskSizeDivisor;

// How many tasks to cut n entries into: 1 (serial) for small n or one thread.
inline int64_t tasks_for(int64_t n, int threads) {
    if (threads <= 1 || n < kParallelItems) return 1;
    return std::min<int64_t>(n / kTaskItems, 64 * int64_t(threads));
}

// The lowest index that first_in(lo, hi) finds in [0, n) (it returns -1 or an index in
// [lo, hi)), or -1: chunks in parallel, the first chunk with a hit wins.
template <class Fn>
int64_t first_over_chunks(int64_t n, int threads, Fn&& first_in) {
    const int64_t ntasks = tasks_for(n, threads);
    if (ntasks == 1) return n > 0 ? first_in(int64_t(0), n) : -1;
    std::vector<int64_t> found(static_cast<size_t>(ntasks), -1);
    parallel_for(ntasks, threads, [&](int64_t t) {
        found[t] = first_in(int64_t((__int128)n * t / ntasks),
                            int64_t((__int128)n * (t + 1) / ntasks));
    });
    for (int64_t f : found) {
        if (f >= 0) return f;
    }
    return -1;
}

// The first i in [lo, hi) with bad(i) (a branch-free test), or -1: blocks are tested whole
// (the compiler vectorises that), and only a block with a hit one by one.
template <class Bad>
int64_t first_in_blocks(int64_t lo, int64_t hi, Bad&& bad) {
    constexpr int64_t kBlock = 256;
    for (int64_t i0 = lo; i0 < hi; i0 += kBlock) {
        const int64_t end = std::min(i0 + kBlock, hi);
        bool any = false;
        for (int64_t i = i0; i < end; ++i) any |= bad(i);
        if (any) {
            for (int64_t i = i0; i < end; ++i) {
                if (bad(i)) return i;
            }
        }
    }
    return -1;
}

// The lengths' total, checked against the 8 * ncodes bytes ncodes codes can hold, and their
// prefix sums at positions (non-decreasing string indices; a smaller one counts as the largest
// before it, one past n as n): throws CorruptData naming the first negative length or the
// string where the total passes the limit.
int64_t length_sums(const int64_t* lengths, int64_t n, int64_t ncodes, const int64_t* positions,
                    int64_t npositions, int64_t* prefix, int threads);

// The first string whose code count cannot yield its length (1-8 bytes a code, 1 per escape
// pair), or -1. code_offsets: n + 1.
int64_t first_misfit(const int64_t* code_offsets, const int64_t* lengths, int64_t n, int threads);

// The first null string (bit clear in validity) with bytes or (code_offsets given) codes, or -1.
int64_t first_filled_null(const uint8_t* validity, const int64_t* lengths,
                          const int64_t* code_offsets, int64_t n, int threads);

int64_t count_set_bits(const uint8_t* bitmap, int64_t nbytes);

// Sets bit `bit + code_offsets[i]` of the LSB-first bitmap out (nbits bits) for every string i
// with codes (code_offsets[i + 1] > code_offsets[i]): where the strings' codes start, which the
// GPU's checked decode matches against where their output starts. False, with the bits before
// it set, at the first position outside [0, nbits). code_offsets: n + 1.
bool mark_code_starts(const int64_t* code_offsets, int64_t n, int64_t bit, uint8_t* out,
                      int64_t nbits);

// ORs bits [0, nbits) of the LSB-first bitmap src into out from bit `bit` on (out holds at
// least (bit + nbits + 7) / 8 bytes; src's bits past nbits are ignored).
void or_bits(const uint8_t* src, int64_t nbits, uint8_t* out, int64_t bit);

}  // namespace fsstgpu_native
