// fsstgpu._native.plan_blocks (documented in fsstgpu/native/plan.py): the arrays checked here
// and by check_train_range, the whole plan made with the GIL released.
#include "bind_plan.h"

#include <pybind11/numpy.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "bind_arrays.h"
#include "parallel.h"
#include "plan.h"

namespace py = pybind11;
using namespace fsstgpu_native;

namespace {

py::tuple plan_blocks_py(const bind::Array<uint8_t>& data, const bind::Array<int64_t>& offsets,
                         int64_t sample_bytes, int64_t segment_bytes, int64_t max_block_bytes,
                         double tolerance, bool speculate, int threads, bool walk,
                         int extra_rounds) {
    const int64_t size = bind::length(data, "data");
    const int64_t n = bind::length(offsets, "offsets") - 1;
    if (n < 0) throw std::invalid_argument("offsets must hold n + 1 string boundaries");
    check_train_range(size, offsets.data(), n, 0, n, sample_bytes, threads);
    if (!std::isfinite(tolerance) || tolerance < 0) {
        throw std::invalid_argument("tolerance must be a finite number >= 0");
    }
    check_extra_rounds(extra_rounds);
    PlanOptions opt;
    opt.sample_bytes = sample_bytes;
    opt.segment_bytes = segment_bytes;
    opt.max_block_bytes = max_block_bytes;
    opt.tolerance = tolerance;
    opt.speculate = speculate;
    opt.walk = walk;
    opt.extra_rounds = extra_rounds;
    // every table's symbols in SymbolTable's canonical order (by length, then bytes: for equal
    // lengths the big-endian reading of the zero-padded value), table after table, so that
    // Python wraps slices of three arrays (a SymbolTable a block: 4047 of them took 0.29 s of a
    // 2.3 s compress on 16 cores when each was made from a list of bytes and sorted again);
    // tables sorted in parallel (one after another: 12 ms of a 16-core plan of 1024 tables)
    Plan plan;
    std::vector<uint64_t> packed;
    std::vector<uint8_t> lengths;
    std::vector<int64_t> first{0};
    bind::without_gil([&] {
        plan = plan_blocks(data.data(), size, offsets.data(), n, opt, threads);
        for (const Symbols& s : plan.tables) {
            first.push_back(first.back() + static_cast<int64_t>(s.values.size()));
        }
        packed.resize(static_cast<size_t>(first.back()));
        lengths.resize(static_cast<size_t>(first.back()));
        parallel_for(static_cast<int64_t>(plan.tables.size()), threads, [&](int64_t t) {
            const Symbols& s = plan.tables[static_cast<size_t>(t)];
            std::vector<std::pair<uint8_t, uint64_t>> order;  // (length, big-endian value)
            order.reserve(s.values.size());
            for (size_t i = 0; i < s.values.size(); ++i) {
                const int len = s.lengths[i];
                const uint64_t v =
                    len >= 8 ? s.values[i] : s.values[i] & ((uint64_t{1} << (8 * len)) - 1);
                order.emplace_back(static_cast<uint8_t>(len), __builtin_bswap64(v));
            }
            std::sort(order.begin(), order.end());
            int64_t at = first[static_cast<size_t>(t)];
            for (const auto& [len, be] : order) {
                packed[static_cast<size_t>(at)] = __builtin_bswap64(be);
                lengths[static_cast<size_t>(at++)] = len;
            }
        });
    });
    return py::make_tuple(bind::to_array(plan.block_starts), bind::to_array(packed),
                          bind::to_array(lengths), bind::to_array(first));
}

}  // namespace

void bind_plan(py::module_& m) {
    m.def("plan_blocks", &plan_blocks_py, py::arg("data"), py::arg("offsets"),
          py::arg("sample_bytes"), py::arg("segment_bytes"), py::arg("max_block_bytes"),
          py::arg("tolerance"), py::arg("speculate"), py::arg("threads"), py::arg("walk") = true,
          py::arg("extra_rounds") = 3);
}
