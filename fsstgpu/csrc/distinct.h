// How many distinct strings a column holds, counted only as far as a caller's question needs:
// compress_file asks whether a column's first row group repeats enough for dictionary-encoded
// codes (formats/files.py, _repeats), which pyarrow's count_distinct answered by copying every
// distinct value into a hash table of its own.
#pragma once

#include <cstdint>

namespace fsstgpu_native {

// The number of distinct valid strings data[offsets[i]:offsets[i + 1]] (i < n; validity: an
// Arrow bitmap of n bits, or nullptr for all valid), or limit + 1 as soon
// as more than limit are found (the rest is not read). Strings are told apart by a 64-bit hash
// of their bytes: two that collide count once, which only moves a caller's estimate.
// Offsets are checked (non-decreasing, inside size bytes) up to where the count stops:
// std::invalid_argument otherwise.
int64_t distinct_upto(const uint8_t* data, int64_t size, const int64_t* offsets, int64_t n,
                      const uint8_t* validity, int64_t limit);

}  // namespace fsstgpu_native
