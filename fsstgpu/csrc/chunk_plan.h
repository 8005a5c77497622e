// A Parquet file's fsst column chunks read and planned for a device reader in one call
// (formats/page_plan.py's plan_column; the checks are those its Python made a chunk at a time,
// kept as the tests' model in tests/chunk_plan_model.py): each chunk read from the file into the
// caller's buffer, its page headers parsed (page_headers.h) and checked against its footer
// entry, its pages' CRCs checked, each data page reduced to where its levels and values lie,
// and its dictionary page's sizes (codes) or values (lengths) read. The chunks are independent,
// so they run on the pool's threads with no GIL held; the first error in chunk order is kept.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fsstgpu_native {

// An fsst storage's leaves, as ChunkSpec::leaf numbers them.
enum class Leaf : int64_t { codes = 0, lengths = 1, cuts = 2, table = 3 };

struct ChunkSpec {
    int64_t file_at;     // the chunk's first byte in the file
    int64_t size;        // its bytes
    int64_t buf_at;      // where it is read to in the buffer
    int64_t col_at;      // its place in the column's bytes (the positions returned count from it)
    int64_t num_values;  // the footer's values (the rows of its row group)
    int64_t first_row;   // its row group's first row in the column
    int64_t group;       // its row group's position in the plan
    int64_t leaf;        // Leaf
    int64_t wide;        // 1 where the lengths leaf is INT64 (its dictionary values 8 bytes)
};

// A data page: levels_at, levels_size, values_at (a dictionary page's indices: after their bit
// width byte), values_end, rows, first row, encoding, bit width (0 unless dictionary indices),
// group, chunk, page (its place among its chunk's pages).
constexpr int kPlanFields = 11;
// A page's CRC: chunk, start (in the chunk), size, stored CRC (-1 where none is stored).
constexpr int kCrcFields = 4;

// How an error is named (by formats/page_plan.py): a damaged chunk or page, a layout the
// reader does not take, a file that ends inside a chunk, or the system's read error (errno in
// `page`).
enum class PlanError : int64_t { none = 0, corrupt = 1, unsupported = 2, short_file = 3, os = 4 };

struct ChunkPlans {
    std::vector<int64_t> rows;          // kPlanFields a data page, chunk after chunk
    std::vector<int64_t> dictionaries;  // 3 a chunk: start (column position), size, count; -1s
    std::vector<uint64_t> entries;      // codes: each dictionary entry's size; lengths: values
    std::vector<int64_t> entry_at;      // where each chunk's entries start (chunks + 1)
    std::vector<int64_t> crcs;          // kCrcFields a page
    // the first error in chunk order: its chunk, kind, page (-1: the chunk's; -2: its
    // dictionary page) and message
    int64_t error_chunk = -1;
    PlanError error = PlanError::none;
    int64_t error_page = -1;
    std::string message;
};

// Reads and plans `specs` (their buffer ranges inside buffer[0:buffer_size], in order, not
// overlapping: checked by the binding) from file descriptor fd (pread: no shared position),
// checking each page's CRC where check_crc. `threads` chunks at a time.
ChunkPlans plan_chunks(int fd, uint8_t* buffer, const std::vector<ChunkSpec>& specs,
                       bool check_crc, int threads);

}  // namespace fsstgpu_native
