// A Parquet column chunk's page headers (Thrift compact protocol) read in one pass: what
// formats/raw_pages.py's chunk_pages reads with its Python Thrift reader, ~35 us a page there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fsstgpu_native {

// One page: kind (Parquet's PageType: 0 data, 2 dictionary, 3 data v2), its values' encoding
// and count, where its payload starts in the chunk and its stored size, its uncompressed size,
// its CRC (unsigned; -1 where none is stored), a version 2 page's levels bytes (repetition and
// definition), whether its rest is compressed (0/1), a version 1 page's definition levels'
// encoding (3 for a version 2 page), a version 2 page's repetition levels' bytes, and where its
// header starts.
constexpr int kPageFields = 12;

// Every page of chunk[0:size], end to end: kPageFields values a page. Throws CorruptData
// (the message starting "the page header at byte N" or "the page at byte N") for a header
// the Python reader refuses, a payload past the chunk, or more than max_pages pages.
std::vector<int64_t> page_headers(const uint8_t* chunk, size_t size, int64_t max_pages);

}  // namespace fsstgpu_native
