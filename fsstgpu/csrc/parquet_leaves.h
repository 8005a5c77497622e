// The leaves of an fsst column's Parquet column chunk (codes, lengths, cuts, table: a struct
// whose leaves have definition level 2 and no repetition), decoded from their pages' payloads
// straight into the buffers an Arrow reader would give, so that a file read needs neither
// pyarrow's page decoding nor its Arrow arrays. Only what fsstgpu's writer makes is taken
// (v1 data pages and dictionary pages; PLAIN, DELTA_LENGTH_BYTE_ARRAY, RLE_DICTIONARY /
// PLAIN_DICTIONARY, DELTA_BINARY_PACKED values; RLE levels); anything else, and anything that
// cannot be right, throws CorruptData and the caller reads the chunk through pyarrow, which
// names a fault. Every read is bounds-checked: the payloads come from a file.
#pragma once

#include <cstdint>
#include <vector>

namespace fsstgpu_native {

// One page of a leaf's chunk: its PageType and header fields, and its payload decompressed.
struct LeafPage {
    int64_t type = 0;        // 0 data (v1), 2 dictionary; others are refused
    int64_t num_values = 0;  // levels of a data page; entries of a dictionary page
    int64_t encoding = 0;    // of the values (parquet.thrift's Encoding)
    const uint8_t* body = nullptr;
    int64_t size = 0;
};

// What a leaf decodes to. Levels become two bitmaps of the n rows (least significant bit
// first): row_bits (level >= 1: the struct's row is valid) and value_bits (level 2: the leaf
// has a value); value k of the pages belongs to the k-th row with level 2.
struct LeafRows {
    std::vector<uint8_t> row_bits, value_bits;
    int64_t row_nulls = 0, value_nulls = 0;  // clear bits of each
    // byte arrays: n + 1 offsets from 0 (a row without a value is empty) and the bytes
    std::vector<int64_t> offsets;
    std::vector<uint8_t> data;
    // integers (INT32 / INT64 leaves): n values, 0 where a row has none
    std::vector<uint64_t> values;
    // dictionary indices only (the table leaf): n indices, 0 where a row has none; the
    // dictionary's entries as byte ranges (start, size) in the dictionary page's payload
    std::vector<uint32_t> index;
    std::vector<int64_t> entries;  // 2 per entry
};

enum class LeafKind : int { kBytes = 0, kInt32 = 1, kInt64 = 2, kIndices = 3 };

// Decodes a leaf of n rows from its pages, in order (at most one dictionary page, first).
void decode_leaf(LeafKind kind, int64_t n, const std::vector<LeafPage>& pages, LeafRows& out);

// The RLE / bit-packed hybrid run of count values of bit width w (0-32) in buf[pos:end] into
// out; returns where the run's last group ends. Public for the fuzz tests.
int64_t rle_hybrid(const uint8_t* buf, int64_t pos, int64_t end, int w, int64_t count,
                   uint32_t* out);

}  // namespace fsstgpu_native
