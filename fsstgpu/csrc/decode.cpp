// Decoding entry points: one range (decoder.py's decode_range kernel) and a whole column from
// its split points (decoder.py's decode_all), with the same checks and messages.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "codec.h"
#include "errors.h"
#include "kernels.h"
#include "parallel.h"

namespace fsstgpu_native {

namespace {

constexpr int64_t kTaskBytes = 1 << 20;  // output bytes per parallel task

std::string range(int64_t a, int64_t b) { return std::to_string(a) + ".." + std::to_string(b); }

// Every length at most 8: the kernels store a symbol as one 8-byte word.
void check_lengths(const uint8_t* lens, int64_t ntables) {
    for (int64_t i = 0; i < ntables * 256; ++i) {
        if (lens[i] > 8) {
            throw std::invalid_argument("symbol length " + std::to_string(lens[i]) +
                                        " over 8 (table " + std::to_string(i / 256) +
                                        ", code " + std::to_string(i % 256) + ")");
        }
    }
}

}  // namespace

int64_t decode_one(const uint8_t* codes, int64_t ncodes, int64_t start, int64_t end,
                   const uint64_t* packed, const uint8_t* lens, uint8_t* out, int64_t nout,
                   int64_t out_pos, int64_t out_end) {
    if (!(0 <= start && start <= end && end <= ncodes)) {
        throw std::invalid_argument("code range " + range(start, end) + " outside " +
                                    range(0, ncodes));
    }
    if (!(0 <= out_pos && out_pos <= out_end && out_end <= nout)) {
        throw std::invalid_argument("output range " + range(out_pos, out_end) + " outside " +
                                    range(0, nout));
    }
    check_lengths(lens, 1);
    return kernels(active_isa()).decode(codes, start, end, packed, lens, out, out_pos, out_end);
}

void check_splits(int64_t ncodes, const int64_t* sc, int64_t nc, const int64_t* so, int64_t no,
                  const int64_t* st, int64_t nsplits, const uint8_t* lens, int64_t ntables,
                  int64_t total_out) {
    if (total_out < 0) throw CorruptData("negative output size " + std::to_string(total_out));
    check_lengths(lens, ntables);
    if (nc != nsplits + 1 || no != nsplits + 1) {
        throw CorruptData("split arrays disagree: " + std::to_string(nc) + " code starts, " +
                          std::to_string(no) + " output starts, " + std::to_string(nsplits) +
                          " table indices (need n + 1, n + 1, n)");
    }
    if (sc[0] != 0 || sc[nsplits] != ncodes) {
        throw CorruptData("split code positions must run from 0 to " + std::to_string(ncodes) +
                          ", not " + std::to_string(sc[0]) + " to " +
                          std::to_string(sc[nsplits]));
    }
    if (so[0] != 0 || so[nsplits] != total_out) {
        throw CorruptData("split output positions must run from 0 to " +
                          std::to_string(total_out) + ", not " + std::to_string(so[0]) +
                          " to " + std::to_string(so[nsplits]));
    }
    for (int64_t k = 0; k < nsplits; ++k) {
        if (sc[k + 1] < sc[k] || so[k + 1] < so[k]) {
            throw CorruptData("split positions must be non-decreasing");
        }
    }
    for (int64_t k = 0; k < nsplits; ++k) {
        if (st[k] < 0 || st[k] >= ntables) {
            throw CorruptData("split table index " + std::to_string(st[k]) + " but only " +
                              std::to_string(ntables) + " tables");
        }
    }
}

void decode_splits(const uint8_t* codes, const int64_t* sc, const int64_t* so,
                   const int64_t* st, int64_t nsplits, const uint64_t* packed,
                   const uint8_t* lens, uint8_t* out, int64_t total_out, int threads) {
    const Kernels& kern = kernels(active_isa());
    std::vector<int64_t> status(static_cast<size_t>(nsplits));
    // tasks of about kTaskBytes of output, cut at split boundaries
    const int64_t ntasks = std::max<int64_t>(1, std::min(nsplits, total_out / kTaskBytes));
    std::vector<int64_t> bounds(static_cast<size_t>(ntasks + 1));
    for (int64_t t = 0; t < ntasks; ++t) {
        const int64_t target = static_cast<int64_t>((__int128)total_out * t / ntasks);
        bounds[t] = std::lower_bound(so, so + nsplits, target) - so;
    }
    bounds[ntasks] = nsplits;
    parallel_for(ntasks, threads, [&](int64_t t) {
        for (int64_t k = bounds[t]; k < bounds[t + 1]; ++k) {
            const int64_t row = st[k] * 256;
            status[k] = kern.decode(codes, sc[k], sc[k + 1], packed + row, lens + row, out,
                                    so[k], so[k + 1]);
        }
    });
    int64_t first = -1, nbad = 0;
    for (int64_t k = 0; k < nsplits; ++k) {
        if (status[k] != so[k + 1]) {
            if (first < 0) first = k;
            ++nbad;
        }
    }
    if (first >= 0) {
        const int64_t k = first;
        const std::string what = status[k] < 0
                                     ? "is corrupt"
                                     : "ends at output byte " + std::to_string(status[k]);
        throw CorruptData("split " + std::to_string(k) + " (codes " + range(sc[k], sc[k + 1]) +
                          ", table " + std::to_string(st[k]) + ") " + what +
                          "; expected output bytes " + range(so[k], so[k + 1]) + " (" +
                          std::to_string(nbad) + " bad splits)");
    }
}

}  // namespace fsstgpu_native
