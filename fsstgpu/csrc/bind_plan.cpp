// fsstgpu._native.plan_blocks (documented in fsstgpu/native/plan.py): the arrays checked here
// and by check_train_range, the whole plan made with the GIL released.
#include "bind_plan.h"

#include <pybind11/numpy.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "bind_arrays.h"
#include "plan.h"

namespace py = pybind11;
using namespace fsstgpu_native;

namespace {

py::tuple plan_blocks_py(const bind::Array<uint8_t>& data, const bind::Array<int64_t>& offsets,
                         int64_t sample_bytes, int64_t segment_bytes, int64_t max_block_bytes,
                         double tolerance, bool speculate, int threads) {
    const int64_t size = bind::length(data, "data");
    const int64_t n = bind::length(offsets, "offsets") - 1;
    if (n < 0) throw std::invalid_argument("offsets must hold n + 1 string boundaries");
    check_train_range(size, offsets.data(), n, 0, n, sample_bytes);
    if (!std::isfinite(tolerance) || tolerance < 0) {
        throw std::invalid_argument("tolerance must be a finite number >= 0");
    }
    PlanOptions opt;
    opt.sample_bytes = sample_bytes;
    opt.segment_bytes = segment_bytes;
    opt.max_block_bytes = max_block_bytes;
    opt.tolerance = tolerance;
    opt.speculate = speculate;
    Plan plan;
    plan = bind::without_gil([&] {
        return plan_blocks(data.data(), size, offsets.data(), n, opt, threads);
    });
    // each table as a list of its symbols' bytes (what a SymbolTable is made of: making them
    // here costs ~10 us a table, slicing arrays in Python ~50)
    py::list tables;
    for (const Symbols& s : plan.tables) {
        std::vector<std::string> symbols(s.values.size());
        for (size_t i = 0; i < symbols.size(); ++i) {
            for (int k = 0; k < s.lengths[i]; ++k) {
                symbols[i].push_back(static_cast<char>(s.values[i] >> (8 * k)));
            }
        }
        // in SymbolTable's order (by length, then bytes), which its sort then finds at once
        std::sort(symbols.begin(), symbols.end(), [](const std::string& a, const std::string& b) {
            return a.size() != b.size() ? a.size() < b.size() : a < b;
        });
        py::list out;
        for (const std::string& sym : symbols) out.append(py::bytes(sym));
        tables.append(std::move(out));
    }
    return py::make_tuple(bind::to_array(plan.block_starts), std::move(tables));
}

}  // namespace

void bind_plan(py::module_& m) {
    m.def("plan_blocks", &plan_blocks_py, py::arg("data"), py::arg("offsets"),
          py::arg("sample_bytes"), py::arg("segment_bytes"), py::arg("max_block_bytes"),
          py::arg("tolerance"), py::arg("speculate"), py::arg("threads"));
}
