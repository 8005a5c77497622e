// native.string_bounds: the least and greatest strings of a column (formats/pruning.py).
#include "bind_bounds.h"

#include <pybind11/stl.h>

#include <optional>
#include <stdexcept>

#include "bind_arrays.h"
#include "bounds.h"

namespace py = pybind11;
using namespace fsstgpu_native;

void bind_bounds(py::module_& m) {
    m.def(
        "string_bounds",
        [](const bind::Array<uint8_t>& data, const bind::Array<int64_t>& offsets,
           const std::optional<bind::Array<uint8_t>>& validity, int threads) {
            const int64_t n = bind::length(offsets, "offsets") - 1;
            if (n < 0) throw std::invalid_argument("offsets must hold n + 1 entries");
            const uint8_t* bits = nullptr;
            if (validity) {
                if (bind::length(*validity, "validity") < (n + 7) / 8) {
                    throw std::invalid_argument("validity holds fewer bits than strings");
                }
                bits = validity->data();
            }
            const int64_t size = bind::length(data, "data");
            return bind::without_gil([&] {
                return string_bounds(data.data(), size, offsets.data(), n, bits, threads);
            });
        },
        py::arg("data"), py::arg("offsets"), py::arg("validity"), py::arg("threads"));
}
