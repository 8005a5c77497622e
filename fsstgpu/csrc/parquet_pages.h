// Parquet's value encodings that a raw page reader meets in fsstgpu's files (formats/raw_pages.py
// reads the pages; formats/raw_pages.md ... see fsstgpu/native/pages.py): the RLE / bit-packed
// hybrid (definition levels, dictionary indices) and DELTA_BINARY_PACKED (the lengths of
// DELTA_LENGTH_BYTE_ARRAY's strings: the fsst codes'). Decoded from untrusted bytes: every read
// is checked against the data's end and every count against the caller's, so forged pages
// throw CorruptData instead of reading or writing out of bounds or allocating without limit.
#pragma once

#include <cstdint>

namespace fsstgpu_native {

// `count` values of `bit_width` bits (0-32) of the RLE / bit-packed hybrid encoding (no length
// prefix) from data[0:size] into out; returns the bytes read (a bit-packed run's last group may
// hold values past `count`: read, not written). Throws CorruptData where the data ends before
// `count` values or std::invalid_argument for a bit width over 32.
int64_t decode_rle_hybrid(const uint8_t* data, int64_t size, int bit_width, int64_t count,
                          uint32_t* out);

// The values of a DELTA_BINARY_PACKED run from data[0:size] into out, which has room for
// `count`: its header must declare exactly `count` values. Returns the bytes read. Arithmetic
// wraps modulo 2**64, as the encoding defines it. Throws CorruptData for a malformed header
// (block size not a positive multiple of 128, miniblocks not a multiple of 32 values, a bit
// width over 64), a count other than `count`, or data ending inside a block.
int64_t decode_delta_binary_packed(const uint8_t* data, int64_t size, int64_t count,
                                   int64_t* out);

// DELTA_LENGTH_BYTE_ARRAY's `count` lengths (a DELTA_BINARY_PACKED run at data[0:size]) as
// offsets from 0 into offsets (count + 1), each checked to be >= 0 and to fit in the bytes
// after the run; returns where the strings' bytes start. `what` names the data in errors.
int64_t decode_delta_length_offsets(const uint8_t* data, int64_t size, int64_t count,
                                    int64_t* offsets, const char* what);

// DELTA_BYTE_ARRAY's two runs from data[0:size]: the `count` prefix lengths (into prefix,
// each 0 to 2**31 - 1) and the suffixes' offsets (into suffix_offsets, count + 1, as
// decode_delta_length_offsets gives them). Returns where the suffixes' bytes start; *out_size
// is the most bytes the strings can take (the prefixes' and suffixes' together), what
// decode_delta_strings then needs.
int64_t decode_delta_byte_array_runs(const uint8_t* data, int64_t size, int64_t count,
                                     int64_t* prefix, int64_t* suffix_offsets,
                                     int64_t* out_size);

// Throws CorruptData ("<what>: N values cannot be in these bytes (at most M)") unless
// 0 <= count <= most: a page's declared count checked against what its bytes can hold before
// anything is allocated for it.
void check_value_count(int64_t count, int64_t most, const char* what);

// PLAIN byte arrays (each a 4-byte little-endian length, then its bytes) from data[0:size]:
// `count` of them, their lengths' running sum into offsets (count + 1, from 0) and their bytes
// end to end into out (which has room for size bytes: they are fewer; null: only the offsets).
// Returns the bytes read. Throws CorruptData where a length is negative or runs past the
// data.
int64_t decode_plain_byte_arrays(const uint8_t* data, int64_t size, int64_t count,
                                 int64_t* offsets, uint8_t* out);

// DELTA_BYTE_ARRAY's `count` strings: each the first prefix[k] bytes of the string before it,
// then its suffix (suffix_offsets, count + 1 from 0, into suffixes); their offsets into
// offsets (count + 1, from 0) and their bytes into out, which has room for out_size bytes.
// Returns the strings' bytes. Throws CorruptData where a prefix is negative or longer than the
// string before it, or the strings outgrow out_size.
int64_t decode_delta_strings(const int64_t* prefix, const int64_t* suffix_offsets,
                             const uint8_t* suffixes, int64_t count, int64_t* offsets,
                             uint8_t* out, int64_t out_size);

}  // namespace fsstgpu_native
