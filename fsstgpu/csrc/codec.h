// The codec's entry points on plain arrays (bind_codec.cpp binds them to NumPy and drops the GIL
// around them). Each checks its arguments before any kernel reads them: bad arguments throw
// std::invalid_argument, corrupt compressed data CorruptData (errors.h).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "matcher.h"

namespace fsstgpu_native {

// encode.cpp: strings block_starts[b]:block_starts[b + 1] with matchers[b], b < nblocks;
// code_offsets (n + 1 entries) gets each string's start in the codes. The same bytes whatever
// the thread count.
struct FreeBytes {
    void operator()(uint8_t* p) const { std::free(p); }
};
struct Codes {
    std::unique_ptr<uint8_t, FreeBytes> bytes;  // malloc'd: shrunk in place by realloc
    int64_t size = 0;
};
// Each block's table comes either built (matchers[b]) or as symbols (symbols: block b's are
// values/lengths[first[b]:first[b + 1]], code i = symbol i: block_symbol_starts); from
// symbols a block's lookup tables are built by the first chunk that needs them and freed after
// its last, so a column of thousands of blocks holds a few at a time.
struct BlockSymbols {
    const uint64_t* values;
    const uint8_t* lengths;
    const int64_t* first;  // nblocks + 1 entries
};
Codes encode_column(const uint8_t* data, int64_t size, const int64_t* offsets, int64_t n,
                    const int64_t* block_starts, int64_t nblocks, const Matcher* const* matchers,
                    int threads, int64_t* code_offsets);
Codes encode_column(const uint8_t* data, int64_t size, const int64_t* offsets, int64_t n,
                    const int64_t* block_starts, int64_t nblocks, const BlockSymbols& symbols,
                    int threads, int64_t* code_offsets);
// Where each block's symbols start (nblocks + 1 entries) given counts[b] of them for block b:
// throws std::invalid_argument unless each count is 0-255, they add up to nvalues and every
// block's symbols pass check_symbols (matcher.h).
std::vector<int64_t> block_symbol_starts(const int64_t* counts, int64_t nblocks,
                                         const uint64_t* values, const uint8_t* lengths,
                                         int64_t nvalues);

// decode.cpp. One range (a table as 256 symbols and 256 lengths, 0: no symbol): the output end, or -1 when the codes are corrupt.
int64_t decode_one(const uint8_t* codes, int64_t ncodes, int64_t start, int64_t end,
                   const uint64_t* packed, const uint8_t* lens, uint8_t* out, int64_t nout,
                   int64_t out_pos, int64_t out_end);
// A column from its split points: decode.h.

// utf8.cpp: the first of the n strings that is not valid UTF-8, or -1.
template <class Off>
int64_t first_invalid_string(const uint8_t* data, int64_t size, const Off* offsets, int64_t n,
                             int threads);

}  // namespace fsstgpu_native
