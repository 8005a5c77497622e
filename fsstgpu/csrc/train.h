// FSST symbol-table training (Boncz, Neumann and Leis, PVLDB 2020), callable from C++ and bound
// to Python by bind_train.cpp. fsstgpu/training.py documents the algorithm and its tuning; this
// is its implementation: the same input, sample size and seed always give the same symbols.
//
// Inputs are trusted here (the callers check them: see check_train_range): offsets[lo..hi]
// non-decreasing and inside the data. Trainings on different threads are independent; each
// thread keeps its scratch (a few MB at the default sample) for its next training.
#pragma once

#include <cstdint>
#include <vector>

namespace fsstgpu_native {

constexpr int64_t kDefaultSampleBytes = 48 << 10;
constexpr uint64_t kTrainSeed = 4637947;  // fsstgpu.training.SEED
constexpr int64_t kSampleLine = 512;       // longer strings give one random 512-byte piece
// A range of fewer than kSpreadRange samples' bytes is sampled evenly, not by random draws.
constexpr int64_t kSpreadRange = 4;

// Tuned on dbtext (see training.py): candidates seen fewer than min_count * fraction / 128
// times are dropped, extra_rounds more rounds over the whole sample come before the last,
// single bytes are weighted single_weight times. extra_rounds = 0: the reference's five rounds
// (block planning's cheap probe tables).
struct TrainOptions {
    int min_count = 5;
    int extra_rounds = 3;
    int single_weight = 4;
    // pair counter width in bits: 0 picks the narrowest that cannot overflow (16 below 64 KB
    // of sample); 32 forces the wide one (tests check both give the same symbols)
    int counter_bits = 0;
    // sample a range of fewer than kSpreadRange * target bytes evenly (sample_into); false:
    // random draws whatever its size (block planning's probe tables)
    bool spread = true;
};

// Trained symbols: values[i] holds symbol i's bytes little-endian, zero beyond lengths[i]
// (1-8); at most 255, in no particular order (a SymbolTable sorts them).
struct Symbols {
    std::vector<uint64_t> values;
    std::vector<uint8_t> lengths;
};

// A training sample of strings lo:hi: all of them when they hold fewer than target bytes;
// else, when they hold fewer than kSpreadRange * target bytes and spread is set, 512-byte
// pieces spread evenly over them, no string twice, as many bytes as the random draws would
// have held distinct ones on average (spread_bytes: fewer than target); else random strings
// (a random 512-byte piece of longer ones) from a generator seeded with seed, until target
// bytes are collected. offsets start at 0 (size() == pieces + 1).
struct Sample {
    std::vector<uint8_t> bytes;
    std::vector<int64_t> offsets;
};
Sample sample_of(const uint8_t* data, const int64_t* offsets, int64_t lo, int64_t hi,
                 int64_t target, uint64_t seed, bool spread = true);

// The bytes of an even sample of a range of raw bytes (target <= raw) that stands in for
// target bytes of random draws: the draws' expected distinct bytes, raw * (1 - e^(-target /
// raw)), at least 1.
int64_t spread_bytes(int64_t raw, int64_t target);

// sample_of into out, whose memory is kept for the next call (a block planner draws thousands
// of small samples): out.bytes holds the sample's bytes, then at least 8 zero bytes (and
// maybe more, unused); returns how many bytes the sample has.
int64_t sample_into(const uint8_t* data, const int64_t* offsets, int64_t lo, int64_t hi,
                    int64_t target, uint64_t seed, Sample& out, bool spread = true);

// Train on a sample: nstrings strings, string i is bytes[offsets[i] - offsets[0] :
// offsets[i + 1] - offsets[0]] (so a slice of a column's own arrays serves as a sample).
Symbols train_sample(const uint8_t* bytes, const int64_t* offsets, int64_t nstrings,
                     const TrainOptions& options = TrainOptions());

// sample_of then train_sample, without copying a range smaller than the sample.
Symbols train_range(const uint8_t* data, const int64_t* offsets, int64_t lo, int64_t hi,
                    int64_t target = kDefaultSampleBytes, uint64_t seed = kTrainSeed,
                    const TrainOptions& options = TrainOptions());

// Throws std::invalid_argument unless 0 <= extra_rounds <= 64 (TrainOptions::extra_rounds).
void check_extra_rounds(int extra_rounds);

// Throws std::invalid_argument unless 0 <= lo <= hi <= n, offsets[lo..hi] run non-decreasing
// inside data[0:size], and target >= 1 (the order checked on `threads`).
void check_train_range(int64_t size, const int64_t* offsets, int64_t n, int64_t lo, int64_t hi,
                       int64_t target, int threads = 1);

// One selection step, exposed for tests: from the use counts count1[k] of codes k < 256 + nsym
// (codes < 256: the escaped byte k; 256 + i: symbol i of values/lengths, which hold codes
// 0..511: value k, length 1 below 256), the next table without pair candidates.
Symbols rank_symbols(const uint64_t* values, const int64_t* lengths, int nsym,
                     const int64_t* count1, int min_count, int single_weight);

}  // namespace fsstgpu_native
