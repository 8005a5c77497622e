// Parquet's value encodings that formats/parquet_pages.py reads raw: DELTA_BINARY_PACKED (the
// code lengths at the head of a DELTA_LENGTH_BYTE_ARRAY page), the RLE / bit-packed hybrid
// (definition levels, dictionary indices) and PLAIN byte arrays (dictionary pages). Pages come
// from files: every read is bounds-checked, and bad data throws CorruptData naming what is
// wrong.
#pragma once

#include <cstdint>
#include <vector>

namespace fsstgpu_native {

// Decode the DELTA_BINARY_PACKED run that starts at buf[pos] (buf holds size bytes) into out
// (resized to its value count, at most max_values); return the position just past it.
int64_t delta_binary_packed(const uint8_t* buf, int64_t size, int64_t pos, int64_t max_values,
                            std::vector<int64_t>& out);

// Decode count values of bit_width (0-32) bits of the RLE / bit-packed hybrid run at
// buf[pos:size] into out; return the position just past the runs that held them.
int64_t rle_hybrid(const uint8_t* buf, int64_t size, int64_t pos, int bit_width, int64_t count,
                   uint32_t* out);

// The count PLAIN byte arrays at buf[pos:size] (a 4-byte little-endian length, then the bytes):
// each one's start and length; return the position just past them.
int64_t plain_byte_arrays(const uint8_t* buf, int64_t size, int64_t pos, int64_t count,
                          int64_t* starts, int64_t* lengths);

}  // namespace fsstgpu_native
