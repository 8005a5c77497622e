// A stored chunk's rows checked and its split points planned in one call (storage_plan.cpp):
// what formats/arrow_read.py's one-pass read does per chunk with stored_rows, a running sum and
// fsstgpu/splits.py's plan_splits, here without the GIL and without the running sum's array.
#pragma once

#include <cstdint>
#include <vector>

#include "splits.h"
#include "storage_rows.h"

namespace fsstgpu_native {

struct StoredPlan {
    RowsFound rows;                  // stored_rows' findings; nothing below unless kOk
    int64_t total = 0;               // the lengths' sum
    std::vector<int64_t> block_out;  // the output position of each run start (runs + 1)
    SplitStarts splits;              // plan_splits of the chunk, without cuts
};

// stored_rows(in, code_offsets_out, lengths_out), then the split points plan_splits gives a
// chunk whose strings carry no cuts: rule 1 at each run's first string, rule 2 at the first
// string starting at or after each multiple of split_size below the total (found from the
// strings, one row per string: assemble_splits keeps one start per code position either way).
// split_size >= 1.
StoredPlan stored_plan(const StoredRows& in, int64_t split_size, int64_t* code_offsets_out,
                       int64_t* lengths_out);

}  // namespace fsstgpu_native
