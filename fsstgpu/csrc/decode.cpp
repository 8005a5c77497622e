// Decoding entry points: one range (decoder.py's decode_range kernel) and a whole column from
// its split points (decoder.py's decode_all), with the same checks and messages.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "entry.h"
#include "errors.h"
#include "kernels.h"
#include "parallel.h"

namespace fsstgpu_native {

namespace {

constexpr int64_t kTaskBytes = 1 << 20;  // output bytes per parallel task

// Table rows of 256 codes; every length at most 8 (the kernels store 8 bytes per symbol).
int64_t check_tables(const Array<uint64_t>& packed, const Array<uint8_t>& lens, int ndim) {
    if (packed.ndim() != ndim || lens.ndim() != ndim || packed.shape(ndim - 1) != 256 ||
        lens.shape(ndim - 1) != 256 || (ndim == 2 && packed.shape(0) != lens.shape(0))) {
        throw std::invalid_argument("symbol tables must be rows of 256 symbols and lengths");
    }
    const int64_t rows = ndim == 2 ? packed.shape(0) : 1;
    const uint8_t* ln = lens.data();
    for (int64_t i = 0; i < rows * 256; ++i) {
        if (ln[i] > 8) {
            throw std::invalid_argument("symbol length " + std::to_string(ln[i]) +
                                        " over 8 (code " + std::to_string(i % 256) + ")");
        }
    }
    return rows;
}

std::string range(int64_t a, int64_t b) { return std::to_string(a) + ".." + std::to_string(b); }

void check_splits(int64_t ncodes, const Array<int64_t>& split_codes,
                  const Array<int64_t>& split_out, const Array<int64_t>& split_table,
                  int64_t ntables, int64_t total_out) {
    const int64_t nsplits = length_1d(split_table, "split_table");
    const int64_t nc = length_1d(split_codes, "split_codes");
    const int64_t no = length_1d(split_out, "split_out");
    if (nc != nsplits + 1 || no != nsplits + 1) {
        throw CorruptData("split arrays disagree: " + std::to_string(nc) + " code starts, " +
                          std::to_string(no) + " output starts, " + std::to_string(nsplits) +
                          " table indices (need n + 1, n + 1, n)");
    }
    const int64_t* sc = split_codes.data();
    const int64_t* so = split_out.data();
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
    const int64_t* st = split_table.data();
    for (int64_t k = 0; k < nsplits; ++k) {
        if (st[k] < 0 || st[k] >= ntables) {
            throw CorruptData("split table index " + std::to_string(st[k]) + " but only " +
                              std::to_string(ntables) + " tables");
        }
    }
}

}  // namespace

int64_t decode_range(const Array<uint8_t>& codes, int64_t start, int64_t end,
                     const Array<uint64_t>& packed, const Array<uint8_t>& lens,
                     Array<uint8_t>& out, int64_t out_pos, int64_t out_end) {
    const int64_t ncodes = length_1d(codes, "codes");
    const int64_t nout = length_1d(out, "out");
    if (!(0 <= start && start <= end && end <= ncodes)) {
        throw std::invalid_argument("code range " + range(start, end) + " outside " +
                                    range(0, ncodes));
    }
    if (!(0 <= out_pos && out_pos <= out_end && out_end <= nout)) {
        throw std::invalid_argument("output range " + range(out_pos, out_end) + " outside " +
                                    range(0, nout));
    }
    check_tables(packed, lens, 1);
    uint8_t* dst = out.mutable_data();
    py::gil_scoped_release nogil;
    return kernels(active_isa()).decode(codes.data(), start, end, packed.data(), lens.data(),
                                        dst, out_pos, out_end);
}

Array<uint8_t> decode_all(const Array<uint8_t>& codes, const Array<int64_t>& split_codes,
                          const Array<int64_t>& split_out, const Array<int64_t>& split_table,
                          const Array<uint64_t>& packed, const Array<uint8_t>& lens,
                          int64_t total_out, int threads) {
    if (total_out < 0) throw CorruptData("negative output size " + std::to_string(total_out));
    const int64_t ncodes = length_1d(codes, "codes");
    const int64_t ntables = check_tables(packed, lens, 2);
    check_splits(ncodes, split_codes, split_out, split_table, ntables, total_out);
    const int64_t nsplits = split_table.shape(0);
    const int64_t* sc = split_codes.data();
    const int64_t* so = split_out.data();
    const int64_t* st = split_table.data();
    Array<uint8_t> out(total_out);
    uint8_t* dst = out.mutable_data();
    std::vector<int64_t> status(static_cast<size_t>(nsplits));
    int64_t first_bad = -1, nbad = 0;
    {
        py::gil_scoped_release nogil;
        const Kernels& kern = kernels(active_isa());
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
                status[k] = kern.decode(codes.data(), sc[k], sc[k + 1], packed.data() + row,
                                        lens.data() + row, dst, so[k], so[k + 1]);
            }
        });
        for (int64_t k = 0; k < nsplits; ++k) {
            if (status[k] != so[k + 1]) {
                if (first_bad < 0) first_bad = k;
                ++nbad;
            }
        }
    }
    if (first_bad >= 0) {
        const int64_t k = first_bad;
        const std::string what = status[k] < 0 ? "is corrupt"
                                               : "ends at output byte " + std::to_string(status[k]);
        throw CorruptData("split " + std::to_string(k) + " (codes " + range(sc[k], sc[k + 1]) +
                          ", table " + std::to_string(st[k]) + ") " + what +
                          "; expected output bytes " + range(so[k], so[k + 1]) + " (" +
                          std::to_string(nbad) + " bad splits)");
    }
    return out;
}

}  // namespace fsstgpu_native
