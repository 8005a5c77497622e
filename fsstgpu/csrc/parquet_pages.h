// The page headers of a Parquet column chunk (parquet.thrift's PageHeader, Thrift compact
// protocol), walked so that the pages' payloads can be shipped to a GPU without Arrow decoding
// them. The bytes come from a file: every read is bounds-checked, and anything that cannot be
// right throws CorruptData naming the page and what is wrong.
#pragma once

#include <cstdint>
#include <vector>

namespace fsstgpu_native {

// The columns of page_headers' rows, one row of kPageFields int64 per page (the Python face,
// fsstgpu/native/parquet.py, names them in this order).
enum PageField : int {
    kPageType,          // PageType: 0 data, 1 index, 2 dictionary, 3 data v2, or another value
    kHeaderOffset,      // where the page's header starts
    kPayloadOffset,     // where its payload (compressed_page_size bytes) starts
    kCompressedSize,    // compressed_page_size
    kUncompressedSize,  // uncompressed_page_size
    kNumValues,         // num_values of the data / dictionary / v2 header; 0 for other pages
    kEncoding,          // encoding of that header; -1 for other pages
    kDefLevelBytes,     // v2: definition_levels_byte_length (else 0: v1 levels are in the payload)
    kRepLevelBytes,     // v2: repetition_levels_byte_length (else 0)
    kIsCompressed,      // v2: is_compressed (default 1); 1 for every other page
    kHasCrc,            // 1 when the header holds a crc
    kCrc,               // the crc as an unsigned 32-bit value (0 without one)
    kPageFields
};

// Walk the pages of buf[start:end] (buf holds size bytes): each a header then its payload, back
// to back, the last one ending exactly at end. Appends kPageFields values a page to rows.
// CorruptData when start..end is not inside buf or any page is malformed.
void page_headers(const uint8_t* buf, int64_t size, int64_t start, int64_t end,
                  std::vector<int64_t>& rows);

}  // namespace fsstgpu_native
