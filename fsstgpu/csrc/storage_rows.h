// One pass over the rows of an fsst column's stored struct (formats/arrow_read.py, version 4:
// codes, lengths, cuts, table): what reading a file's column chunk needs of each row, with the
// GIL released, in place of a dozen NumPy passes and their temporaries. Nothing here raises on
// bad data: it reports the first thing that is off, and the caller reads the chunk the careful
// way, which names it (or copes: codes stored under a null string are dropped there).
#pragma once

#include <cstdint>
#include <vector>

namespace fsstgpu_native {

// A validity bitmap from bit `first`; bits == nullptr: every row valid.
struct Bits {
    const uint8_t* bits = nullptr;
    int64_t first = 0;
};

struct StoredRows {
    int64_t n = 0;
    Bits row;                          // the struct's validity
    Bits codes_valid, lengths_valid, table_valid;
    const int64_t* code_offsets = nullptr;  // n + 1, the codes child's (large_binary)
    int64_t data_size = 0;                  // bytes of the codes child's data buffer
    const uint32_t* lengths32 = nullptr;    // n, one of the two
    const uint64_t* lengths64 = nullptr;
    const uint16_t* table_index = nullptr;  // n: the table child's dictionary indices
    const int32_t* table_of = nullptr;      // dictionary entry -> table id, -1 for a null entry
    int64_t ntable_of = 0;
};

enum class RowsStatus : int {
    kOk = 0,
    kOffsets = 1,     // offsets decrease, or lie outside the data
    kNullChild = 2,   // a valid row with a null codes, lengths or table entry
    kLength = 3,      // a 64-bit length of 2**62 or more
    kTable = 4,       // a valid row naming a table past the dictionary, or a null one
    kFilledNull = 5,  // a null row with codes (the careful reading drops them)
    kMisfit = 6,      // a valid row whose code count cannot make its length (c > 2 len or
                      // len > 8 c: checks.py's first_misfit, here so the read skips that pass)
};

struct RowsFound {
    RowsStatus status = RowsStatus::kOk;
    int64_t nulls[4] = {0, 0, 0, 0};     // clear bits of the struct, codes, lengths, table
    std::vector<int64_t> run_starts;     // 0, each change of table among valid rows, n
    std::vector<int32_t> run_tables;     // the table id of each run
};

// Fills code_offsets_out (n + 1, from 0; nullptr: not wanted, as when they start at 0) and
// lengths_out (n, 0 under null rows) while checking every row; the runs of one table start at the first valid row of each (nulls join the run
// before them). On a status other than kOk the outputs are partly written and meaningless.
RowsFound stored_rows(const StoredRows& in, int64_t* code_offsets_out, int64_t* lengths_out);

}  // namespace fsstgpu_native
