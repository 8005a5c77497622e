// The least and greatest of a column's strings (bytewise, as Arrow orders binary), for the
// per-row-group bounds that filters= prunes by (formats/pruning.py).
#pragma once

#include <cstdint>
#include <utility>

namespace fsstgpu_native {

// Indices of the least and greatest strings data[offsets[i]:offsets[i + 1]] among the valid
// ones (validity: an Arrow bitmap of n bits, or nullptr for all valid); (-1, -1) when none is.
// Offsets are checked (non-decreasing, inside size bytes): std::invalid_argument otherwise.
std::pair<int64_t, int64_t> string_bounds(const uint8_t* data, int64_t size,
                                          const int64_t* offsets, int64_t n,
                                          const uint8_t* validity, int threads);

}  // namespace fsstgpu_native
