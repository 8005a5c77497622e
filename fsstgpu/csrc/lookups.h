// The GPU encoder's lookups (kernels/fsst_encode.cu reads them; kernels/table_lookups.py
// documents them and keeps encode_lookups, the NumPy build of one table's, as the oracle) of
// many tables at once, built on the CPU in one call: a column of 1024 tables took 38 ms of
// host NumPy on the H100 host (BENCHMARKS.md section 66), the largest step of the GPU's fast
// level after training. Everything but the byte pairs' 65536 entries a table: those are the
// bytes' best repeated 256 times with the 2-byte symbols on top, so the caller fills them where
// they go (the device) from one_best and the 2-byte symbols' (at, value) lists.
#pragma once

#include <cstdint>

namespace fsstgpu_native {

constexpr int64_t kLookupShortStride = 65536 + 256;  // ENC_SHORT_STRIDE
constexpr int64_t kLookupBuckets = 1024;             // ENC_BUCKETS
constexpr int64_t kLookupCandidates = 256;           // ENC_CAND_STRIDE

// Where table_lookups writes (each a row per table, at the strides above; two_at / two_value
// hold the tables' 2-byte symbols, table after table, two_first's counts).
struct LookupOutputs {
    uint16_t* one_best;      // count x 256: a byte's best match alone
    int64_t* two_at;         // a 2-byte symbol's entry in the tables' short_best rows
    uint16_t* two_value;     // and its (2 << 8) | code
    uint32_t* bucket_range;  // count x kLookupBuckets: first | end << 16
    uint64_t* cand_vm;       // count x 2 * kLookupCandidates: bytes, mask
    uint16_t* cand_lc;       // count x kLookupCandidates: length | code << 8
};

// Checks `count` tables laid end to end (table t's symbols values[first[t]:first[t + 1]], each
// in SymbolTable's canonical order: by length, then by the big-endian reading of the bytes,
// so no symbol twice), throwing std::invalid_argument naming the table and symbol at fault:
// first from 0 to total without decreasing, at most 255 symbols a table, lengths 1-8, no
// bytes past a symbol's length. Fills two_first (count + 1): the running count of 2-byte
// symbols.
void check_lookup_tables(const uint64_t* values, const uint8_t* lengths, int64_t total,
                         const int64_t* first, int64_t count, int64_t* two_first);

// The lookups of the checked tables, tables spread over `threads`; the same whatever the
// thread count, and equal to kernels/table_lookups.py's encode_lookups of each table.
void table_lookups(const uint64_t* values, const uint8_t* lengths, const int64_t* first,
                   int64_t count, const int64_t* two_first, const LookupOutputs& out,
                   int threads);

}  // namespace fsstgpu_native
