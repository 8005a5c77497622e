// Tables of samples gathered elsewhere (plan.h: check_samples, train_samples; the GPU's samples
// of a column's blocks, fsstgpu/gpu/block_tables.py), trained as the planner trains its blocks.
#include <stdexcept>
#include <string>
#include <vector>

#include "parallel.h"
#include "plan.h"

namespace fsstgpu_native {

void check_samples(int64_t size, const int64_t* offsets, int64_t npieces,
                   const int64_t* piece_first, const int64_t* byte_first, int64_t m) {
    if (piece_first[0] != 0 || piece_first[m] != npieces || byte_first[0] != 0 ||
        byte_first[m] != size) {
        throw std::invalid_argument("the samples must cover their bytes and offsets exactly");
    }
    for (int64_t b = 0; b < m; ++b) {
        const int64_t p0 = piece_first[b], p1 = piece_first[b + 1];
        const std::string which = "sample " + std::to_string(b);
        // (checked before the offsets are read: a forged start reads nothing outside them)
        if (p1 <= p0 || p0 < 0 || p1 > npieces || byte_first[b + 1] < byte_first[b] ||
            byte_first[b] < 0 || byte_first[b + 1] > size) {
            throw std::invalid_argument(which + " has no offsets or lies outside the samples");
        }
        if (offsets[p0] != 0 || offsets[p1 - 1] != byte_first[b + 1] - byte_first[b]) {
            throw std::invalid_argument(which + "'s offsets do not span its bytes");
        }
        for (int64_t p = p0 + 1; p < p1; ++p) {
            if (offsets[p] < offsets[p - 1]) {
                throw std::invalid_argument(which + "'s offsets decrease");
            }
        }
    }
}

PackedTables train_samples(const uint8_t* bytes, const int64_t* offsets,
                           const int64_t* piece_first, const int64_t* byte_first, int64_t m,
                           const TrainOptions& options, int threads) {
    std::vector<Symbols> tables(static_cast<size_t>(m));
    parallel_for(m, threads, [&](int64_t b) {
        if (byte_first[b + 1] == byte_first[b]) return;  // (train_block: a block without bytes)
        tables[static_cast<size_t>(b)] =
            train_sample(bytes + byte_first[b], offsets + piece_first[b],
                         piece_first[b + 1] - piece_first[b] - 1, options);
    });
    return pack_tables(tables, threads);
}

}  // namespace fsstgpu_native
