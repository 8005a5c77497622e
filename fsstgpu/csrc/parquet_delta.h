// Parquet's DELTA_BINARY_PACKED encoding (the lengths at the head of a DELTA_LENGTH_BYTE_ARRAY
// page, integer columns), decoded on the CPU: the reference a GPU decoder is checked against.
// Pages come from files: every read is bounds-checked, and bad data throws CorruptData naming
// what is wrong.
#pragma once

#include <cstdint>
#include <vector>

namespace fsstgpu_native {

// Decode the DELTA_BINARY_PACKED run that starts at buf[pos] and lies inside buf[pos:end]
// (buf holds size bytes) into out (resized to its value count, at most max_values); return
// the position just past it. The deltas are summed modulo 2**64, the two's complement
// wrapping of the format's int64 arithmetic.
int64_t delta_binary_packed(const uint8_t* buf, int64_t size, int64_t pos, int64_t end,
                            int64_t max_values, std::vector<int64_t>& out);

}  // namespace fsstgpu_native
