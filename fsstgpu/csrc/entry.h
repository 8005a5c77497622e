// The entry points module.cpp binds (each validates its arguments, then drops the GIL).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "arrays.h"
#include "matcher.h"

namespace fsstgpu_native {

// encode.cpp: strings block_starts[b]:block_starts[b + 1] with matchers[b]; (codes,
// code_offsets), the same bytes whatever the thread count.
py::tuple encode_blocks(const Array<uint8_t>& data, const Array<int64_t>& offsets,
                        const Array<int64_t>& block_starts,
                        const std::vector<std::shared_ptr<Matcher>>& matchers, int threads);

// decode.cpp: one range (the output end, -1 when corrupt), and a whole column from its splits.
int64_t decode_range(const Array<uint8_t>& codes, int64_t start, int64_t end,
                     const Array<uint64_t>& packed, const Array<uint8_t>& lens,
                     Array<uint8_t>& out, int64_t out_pos, int64_t out_end);
Array<uint8_t> decode_all(const Array<uint8_t>& codes, const Array<int64_t>& split_codes,
                          const Array<int64_t>& split_out, const Array<int64_t>& split_table,
                          const Array<uint64_t>& packed, const Array<uint8_t>& lens,
                          int64_t total_out, int threads);

// utf8.cpp: the first string that is not valid UTF-8, or -1.
template <class Off>
int64_t first_invalid_string(const Array<uint8_t>& data, const Array<Off>& offsets,
                             int threads);

}  // namespace fsstgpu_native
