// Block planning: where a column gets a new symbol table, and each block's table.
// fsstgpu/blocks.py documents the policy (plan_blocks); this is its implementation, in one call
// with the GIL released: the walk over a column's segments, its probes and located changes,
// the columns over max_block_bytes planned piece by piece on every core, and the final
// trainings. The same input always gives the same blocks and tables, whatever the thread count.
//
// Inputs are trusted here: the caller checks them with check_train_range (offsets[0..n]
// non-decreasing inside the data, sample_bytes >= 1).
#pragma once

#include <cstdint>
#include <vector>

#include "train.h"

namespace fsstgpu_native {

struct PlanOptions {
    int64_t sample_bytes = kDefaultSampleBytes;  // each block's training sample
    int64_t segment_bytes = 64 << 10;            // probe granularity (at least 1)
    int64_t max_block_bytes = 64 << 20;          // the largest block (at least 1)
    double tolerance = 0.15;                     // relative cost increase that starts a block
    bool speculate = true;  // train a one-piece column's whole table while probing (spare core)
    // false: no walk, a block every max_block_bytes (the "fast" level: blocks cut by size, a
    // cheap table each, in place of the walk's probes)
    bool walk = true;
    int extra_rounds = 3;  // each block's training: TrainOptions::extra_rounds
};

struct Plan {
    std::vector<int64_t> block_starts;  // string index of each block's start, then n
    std::vector<Symbols> tables;        // one per block (empty for a block of empty strings)
};

Plan plan_blocks(const uint8_t* data, int64_t size, const int64_t* offsets, int64_t n,
                 const PlanOptions& options, int threads);

// Tables laid end to end: table t's symbols are values[first[t]:first[t + 1]] (lengths alike),
// each table's in SymbolTable's canonical order (by length, then bytes: for equal lengths the
// big-endian reading of the zero-padded value).
struct PackedTables {
    std::vector<uint64_t> values;
    std::vector<uint8_t> lengths;
    std::vector<int64_t> first;  // ntables + 1
};

// The tables packed as above, sorted on `threads` (one after another: 12 ms of a 16-core plan
// of 1024 tables). The same whatever the thread count.
PackedTables pack_tables(const std::vector<Symbols>& tables, int threads);

// Samples laid end to end (fsstgpu.native.train_samples: samples gathered elsewhere, the GPU's
// of a column's blocks): sample b's bytes are bytes[byte_first[b]:byte_first[b + 1]] and its
// string ends offsets[piece_first[b]:piece_first[b + 1]], from 0 to its byte count. Throws
// std::invalid_argument unless the m samples cover the size bytes and npieces offsets exactly,
// each with at least one offset, its offsets from 0 to its bytes without decreasing.
void check_samples(int64_t size, const int64_t* offsets, int64_t npieces,
                   const int64_t* piece_first, const int64_t* byte_first, int64_t m);

// Each sample's table as train_range trains a range once it has its sample (a sample without
// bytes gets no symbols, as a block without bytes), on `threads`, packed as pack_tables packs
// them. The same whatever the thread count. The samples checked by check_samples.
PackedTables train_samples(const uint8_t* bytes, const int64_t* offsets,
                           const int64_t* piece_first, const int64_t* byte_first, int64_t m,
                           const TrainOptions& options, int threads);

}  // namespace fsstgpu_native
