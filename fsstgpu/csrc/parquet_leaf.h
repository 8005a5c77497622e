// A Parquet leaf column chunk's pages (decompressed) decoded in one call into Arrow's layout
// for a top-level leaf of at most one nullable parent (an fsst column's storage children,
// formats/raw_columns.py): the definition levels, the present values spread over the rows
// (offsets or fixed-width values, zeros under nulls), optionally the dictionary indices kept.
// Built on parquet_pages.h's decoders; every count and size from the pages is checked.
#pragma once

#include <cstdint>
#include <vector>

namespace fsstgpu_native {

enum LeafPageKind { kDataV1 = 0, kDataV2 = 1, kDictionaryPage = 2 };
enum LeafPhysical { kLeafBytes = 0, kLeafInt32 = 1, kLeafInt64 = 2 };

// One page as stored after decompression: a version 2 data page's repetition and definition
// levels (rep_size and levels_size bytes together) first.
struct LeafPage {
    const uint8_t* body = nullptr;
    int64_t size = 0;
    int kind = kDataV1;
    int encoding = 0;
    int levels_encoding = 3;  // version 1: the definition levels' encoding (3: RLE)
    int64_t num_values = 0;
    int64_t rep_size = 0;
    int64_t levels_size = 0;
};

struct LeafColumn {
    int64_t rows = 0;
    std::vector<uint8_t> levels;  // a definition level a row
    int64_t present = 0;          // rows at the leaf's maximum level
    // bytes: offsets over the rows (rows + 1, from 0; a null row adds nothing) and the bytes;
    // with in_place, `data` holds only the bytes that had to be decoded, and the values' bytes
    // are the runs in `regions` end to end: (page, start, bytes) triples, page -1 for `data`
    // (a DELTA_LENGTH_BYTE_ARRAY page's bytes stay in its body, a dictionary-encoded value's
    // in the dictionary page's: uncopied; adjacent runs of one body merged)
    std::vector<int64_t> offsets;
    std::vector<uint8_t> data;
    std::vector<int64_t> regions;
    // with in_place and body_starts: where each row's bytes start, body_starts[page] + its
    // place in the page's body, or -1 - its place in `data` (0 for an empty or null row)
    std::vector<int64_t> starts;
    // ints: a value a row (0 under a null), as int64
    std::vector<int64_t> ints;
    // keep_indices with every data page dictionary-encoded: an index a row (0 under a null)
    // and the dictionary's byte arrays
    bool indexed = false;
    std::vector<uint32_t> indices;
    std::vector<int64_t> dict_offsets;
    std::vector<uint8_t> dict_data;
};

// The chunk of at most max_rows rows in `pages`. keep_indices: the values are a dictionary's
// indices, kept (every data page must be dictionary-encoded). in_place: byte arrays left where
// they are (LeafColumn::regions); with body_starts (one a page: where its body starts in the
// chunk's bytes, < 0 where it is not there) also a start a row (LeafColumn::starts).
// Unsupported layouts throw std::domain_error (the caller reads the chunk another way);
// malformed pages CorruptData.
LeafColumn decode_leaf(const std::vector<LeafPage>& pages, int physical, int max_def,
                       bool keep_indices, int64_t max_rows, bool in_place = false,
                       const int64_t* body_starts = nullptr);

}  // namespace fsstgpu_native
