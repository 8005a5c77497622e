// The walk over FSST codes that does not decode (fsstgpu/scan.py's contract): lengths, code
// offsets, cuts inside long strings and split checks, in one pass; parallel over chunks of
// strings (or, when the code offsets are unknown, over the column's split points), with the
// serial walk's result and first error whatever the thread count.
#pragma once

#include <cstdint>
#include <vector>

namespace fsstgpu_native {

constexpr int64_t kTaskCodes = 1 << 18;  // codes per parallel chunk, about
constexpr int64_t kParallelCodes = 1 << 21;  // fewer (a few ms): one thread

enum WalkMode { kCheck = 0, kOffsets = 1, kLengths = 2, kLong = 3 };

struct WalkInput {
    const uint8_t* codes;
    int64_t ncodes;
    const int64_t* block_starts;  // nblocks + 1, from 0 to n, non-decreasing
    int64_t nblocks;
    const uint8_t* symlen;         // nblocks rows of 256 symbol lengths (0: no symbol)
    const int64_t* code_offsets;   // n + 1 (all modes but kOffsets)
    const int64_t* lengths;        // n (all modes but kLengths)
    int64_t n;
    int mode;
    int64_t cut_size;              // <= 0: no cuts
    int64_t max_cuts;              // more cuts than this: corrupt (the walk's "string i" error)
    const int64_t* split_codes;    // nsplits + 1 (the last is the end, not a split start)
    const int64_t* split_out;
    int64_t nsplits;               // 0 when no splits are checked
    int64_t* offsets_out;          // kOffsets: n + 1
    int64_t* lengths_out;          // kLengths: n
};

struct WalkCuts {
    std::vector<int64_t> code, out, row;
};

// Throws CorruptData with scan.py's messages; the cuts in order.
WalkCuts walk_codes(const WalkInput& in, int threads);

}  // namespace fsstgpu_native
