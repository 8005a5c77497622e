// fsstgpu._native.symbol_slots (documented in fsstgpu/native/codec.py; the reading in
// table_slots.cpp): the arrays' shapes checked, the output sized by the counts, no GIL held.
#include "bind_tables.h"

#include <pybind11/numpy.h>

#include <stdexcept>

#include "bind_arrays.h"
#include "table_slots.h"

namespace py = pybind11;
using namespace fsstgpu_native;

namespace {

py::tuple symbol_slots_py(const bind::Array<uint8_t>& data, const bind::Array<int64_t>& starts,
                          const bind::Array<uint8_t>& counts) {
    const int64_t size = bind::length(data, "data");
    const int64_t n = bind::length(starts, "starts");
    if (bind::length(counts, "counts", 2) != n || counts.shape(1) != 8) {
        throw std::invalid_argument("counts must be (tables, 8): a count a symbol length");
    }
    int64_t room = 0;
    const uint8_t* c = counts.data();
    for (int64_t k = 0; k < 8 * n; ++k) room += c[k];
    bind::Array<uint64_t> packed(room);
    bind::Array<uint8_t> lengths(room), ok(n);
    int64_t used = 0;
    bind::without_gil([&] {
        used = symbol_slots(data.data(), size, starts.data(), c, n, packed.mutable_data(),
                            lengths.mutable_data(), ok.mutable_data());
    });
    return py::make_tuple(packed[py::slice(0, used, 1)], lengths[py::slice(0, used, 1)], ok);
}

}  // namespace

void bind_tables(py::module_& m) {
    m.def("symbol_slots", &symbol_slots_py, py::arg("data"), py::arg("starts"),
          py::arg("counts"));
}
