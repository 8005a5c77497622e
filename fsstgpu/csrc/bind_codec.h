// The encode and decode bindings' bodies (bind_codec.cpp), bound by module.cpp's
// PYBIND11_MODULE: module.cpp holds only their declarations to pybind11 and is compiled plain in
// the sanitizer test, so whatever reads the caller's arrays is here, in an instrumented source.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "bind_arrays.h"
#include "matcher.h"

namespace fsstgpu_native {
namespace bindings {

// Matcher(packed, lengths): a table's lookup structures (same lengths, checked symbols).
std::shared_ptr<Matcher> make_matcher(const bind::Array<uint64_t>& packed,
                                      const bind::Array<uint8_t>& lengths);

// native.encode_blocks / encode_symbols: (codes, code_offsets) of the strings, each block with
// its table (built matchers, or symbols as values/lengths, counts[b] of them for block b).
pybind11::tuple encode_blocks(const bind::Array<uint8_t>& data,
                              const bind::Array<int64_t>& offsets,
                              const bind::Array<int64_t>& block_starts,
                              const std::vector<std::shared_ptr<Matcher>>& matchers,
                              int threads);
pybind11::tuple encode_symbols(const bind::Array<uint8_t>& data,
                               const bind::Array<int64_t>& offsets,
                               const bind::Array<int64_t>& block_starts,
                               const bind::Array<uint64_t>& values,
                               const bind::Array<uint8_t>& lengths,
                               const bind::Array<int64_t>& counts, int threads);

// native.decode_range: codes[start:end] with one table into out[out_pos:out_end], in place.
int64_t decode_range(const bind::Array<uint8_t>& codes, int64_t start, int64_t end,
                     const bind::Array<uint64_t>& packed, const bind::Array<uint8_t>& lens,
                     bind::Array<uint8_t>& out, int64_t out_pos, int64_t out_end);

// native.compact_tables: (packed, first, lens) of a sequence of tables, as decode_all reads them.
pybind11::tuple compact_tables(const pybind11::sequence& tables);

// native.decode_all: a column from its split points, (output, first bad string or -1).
pybind11::tuple decode_all(const bind::Array<uint8_t>& codes,
                           const bind::Array<int64_t>& split_codes,
                           const bind::Array<int64_t>& split_out,
                           const pybind11::array& split_table,
                           const bind::Array<uint64_t>& packed, const bind::Array<int64_t>& first,
                           const bind::Array<uint8_t>& lens, int64_t total_out,
                           const pybind11::array& ends, bool check_ends,
                           const bind::Array<int64_t>& code_offsets, bool utf8, int threads,
                           const pybind11::object& alloc);

// native.first_invalid_string: the first string that is not valid UTF-8, or -1 (Off: int32_t
// or int64_t, instantiated in bind_codec.cpp).
template <class Off>
int64_t first_invalid(const bind::Array<uint8_t>& data, const bind::Array<Off>& offsets,
                      int threads);

}  // namespace bindings
}  // namespace fsstgpu_native
