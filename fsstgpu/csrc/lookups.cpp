// The GPU encoder's lookups of many tables (lookups.h).
#include "lookups.h"

#include <stdexcept>
#include <string>

#include "parallel.h"

namespace fsstgpu_native {

namespace {

// the bucket of a symbol whose first three bytes are first3: fsst_encode.cu's enc_bucket
inline int64_t bucket_of(uint64_t first3) {
    return static_cast<int64_t>(((first3 & 0xFFFFFF) * 0x9E3779B1ULL & 0xFFFFFFFFULL) >> 22);
}

// the big-endian reading of a zero-padded symbol: SymbolTable's order for equal lengths
inline uint64_t byte_order(uint64_t v) { return __builtin_bswap64(v); }

std::string symbol_at(int64_t t, int64_t c) {
    return "table " + std::to_string(t) + "'s symbol " + std::to_string(c);
}

// table t's lookups (its symbols values[0:n]), written at its rows of out
void one_table(const uint64_t* values, const uint8_t* lengths, int64_t n, int64_t t,
               int64_t two_at, const LookupOutputs& out) {
    uint16_t* one = out.one_best + t * 256;
    for (int b = 0; b < 256; ++b) one[b] = static_cast<uint16_t>(b);  // an escape of the byte
    int64_t bucket[256];
    uint32_t ends[kLookupBuckets + 1] = {};
    for (int64_t c = 0; c < n; ++c) {
        const uint64_t v = values[c];
        const uint16_t code = static_cast<uint16_t>(c);
        if (lengths[c] == 1) {
            one[v] = static_cast<uint16_t>((1 << 8) | code);
        } else if (lengths[c] == 2) {
            out.two_at[two_at] = t * kLookupShortStride + static_cast<int64_t>(v);
            out.two_value[two_at++] = static_cast<uint16_t>((2 << 8) | code);
        } else {
            bucket[c] = bucket_of(v);
            ++ends[bucket[c] + 1];
        }
    }
    for (int64_t k = 0; k < kLookupBuckets; ++k) ends[k + 1] += ends[k];
    uint32_t* range = out.bucket_range + t * kLookupBuckets;
    for (int64_t k = 0; k < kLookupBuckets; ++k) range[k] = ends[k] | (ends[k + 1] << 16);
    // by bucket, then longest first, then by code: ends[k] is bucket k's next free slot
    uint64_t* vm = out.cand_vm + t * 2 * kLookupCandidates;
    uint16_t* lc = out.cand_lc + t * kLookupCandidates;
    for (int len = 8; len >= 3; --len) {
        const uint64_t mask = len == 8 ? ~0ULL : (1ULL << (8 * len)) - 1;
        for (int64_t c = 0; c < n; ++c) {
            if (lengths[c] != len) continue;
            const uint32_t r = ends[bucket[c]]++;
            vm[2 * r] = values[c];
            vm[2 * r + 1] = mask;
            lc[r] = static_cast<uint16_t>(len | (c << 8));
        }
    }
    for (int64_t r = range[kLookupBuckets - 1] >> 16; r < kLookupCandidates; ++r) {
        vm[2 * r] = vm[2 * r + 1] = 0;
        lc[r] = 0;
    }
}

}  // namespace

void check_lookup_tables(const uint64_t* values, const uint8_t* lengths, int64_t total,
                         const int64_t* first, int64_t count, int64_t* two_first) {
    if (first[0] != 0 || first[count] != total) {
        throw std::invalid_argument("the tables' firsts must run from 0 to their symbols");
    }
    two_first[0] = 0;
    for (int64_t t = 0; t < count; ++t) {
        const int64_t lo = first[t], hi = first[t + 1];
        if (hi < lo || lo < 0 || hi > total || hi - lo > 255) {
            throw std::invalid_argument("table " + std::to_string(t) +
                                        " lies outside the symbols or has over 255 of them");
        }
        int64_t twos = 0;
        for (int64_t i = lo; i < hi; ++i) {
            const int len = lengths[i];
            if (len < 1 || len > 8) {
                throw std::invalid_argument(symbol_at(t, i - lo) + " is not 1-8 bytes long");
            }
            if (len < 8 && (values[i] >> (8 * len)) != 0) {
                throw std::invalid_argument(symbol_at(t, i - lo) + " has bytes past its length");
            }
            if (i > lo && (lengths[i - 1] > len ||
                           (lengths[i - 1] == len &&
                            byte_order(values[i - 1]) >= byte_order(values[i])))) {
                throw std::invalid_argument(symbol_at(t, i - lo) +
                                            " is out of canonical order (or twice)");
            }
            twos += len == 2;
        }
        two_first[t + 1] = two_first[t] + twos;
    }
}

void table_lookups(const uint64_t* values, const uint8_t* lengths, const int64_t* first,
                   int64_t count, const int64_t* two_first, const LookupOutputs& out,
                   int threads) {
    // ~2 us a table: 16 tables a task
    constexpr int64_t kPerTask = 16;
    parallel_for((count + kPerTask - 1) / kPerTask, threads, [&](int64_t task) {
        const int64_t end = count < (task + 1) * kPerTask ? count : (task + 1) * kPerTask;
        for (int64_t t = task * kPerTask; t < end; ++t) {
            one_table(values + first[t], lengths + first[t], first[t + 1] - first[t], t,
                      two_first[t], out);
        }
    });
}

}  // namespace fsstgpu_native
