// native.string_bounds: the least and greatest strings of a column (formats/pruning.py);
// native.distinct_upto: its distinct strings, counted up to a limit (formats/files.py).
#include "bind_bounds.h"

#include <pybind11/stl.h>

#include <optional>
#include <stdexcept>
#include <utility>

#include "bind_arrays.h"
#include "bounds.h"
#include "distinct.h"

namespace py = pybind11;
using namespace fsstgpu_native;

namespace {

using Bitmap = std::optional<bind::Array<uint8_t>>;

// The strings' count (from n + 1 offsets) and their bitmap (nullptr: all valid), checked to
// hold a bit for each.
std::pair<int64_t, const uint8_t*> strings_of(const bind::Array<int64_t>& offsets,
                                              const Bitmap& validity) {
    const int64_t n = bind::length(offsets, "offsets") - 1;
    if (n < 0) throw std::invalid_argument("offsets must hold n + 1 entries");
    if (validity && bind::length(*validity, "validity") < (n + 7) / 8) {
        throw std::invalid_argument("validity holds fewer bits than strings");
    }
    return {n, validity ? validity->data() : nullptr};
}

}  // namespace

void bind_bounds(py::module_& m) {
    m.def(
        "string_bounds",
        [](const bind::Array<uint8_t>& data, const bind::Array<int64_t>& offsets,
           const Bitmap& validity, int threads) {
            const auto [n, bits] = strings_of(offsets, validity);
            const int64_t size = bind::length(data, "data");
            return bind::without_gil([&, n = n, bits = bits] {
                return string_bounds(data.data(), size, offsets.data(), n, bits, threads);
            });
        },
        py::arg("data"), py::arg("offsets"), py::arg("validity"), py::arg("threads"));
    m.def(
        "distinct_upto",
        [](const bind::Array<uint8_t>& data, const bind::Array<int64_t>& offsets,
           const Bitmap& validity, int64_t limit) {
            const auto [n, bits] = strings_of(offsets, validity);
            const int64_t size = bind::length(data, "data");
            return bind::without_gil([&, n = n, bits = bits] {
                return distinct_upto(data.data(), size, offsets.data(), n, bits, limit);
            });
        },
        py::arg("data"), py::arg("offsets"), py::arg("validity"), py::arg("limit"));
}
