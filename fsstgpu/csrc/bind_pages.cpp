// native.delta_binary_packed: the code lengths of a DELTA_LENGTH_BYTE_ARRAY page
// (formats/parquet_pages.py).
#include "bind_pages.h"

#include <stdexcept>
#include <vector>

#include "bind_arrays.h"
#include "parquet_delta.h"

namespace py = pybind11;
using namespace fsstgpu_native;

void bind_pages(py::module_& m) {
    m.def(
        "delta_binary_packed",
        [](const bind::Array<uint8_t>& page, int64_t start, int64_t max_values) {
            const int64_t size = bind::length(page, "page");
            if (max_values < 0) throw std::invalid_argument("max_values must be >= 0");
            std::vector<int64_t> values;
            const int64_t end = bind::without_gil([&] {
                return delta_binary_packed(page.data(), size, start, max_values, values);
            });
            return py::make_tuple(bind::to_array(values), end);
        },
        py::arg("page"), py::arg("start"), py::arg("max_values"),
        "Decode the DELTA_BINARY_PACKED values at page[start:] (at most max_values of them): "
        "(values as int64, the position just past them). CorruptData on bad data.");
    m.def(
        "rle_hybrid",
        [](const bind::Array<uint8_t>& page, int64_t start, int bit_width, int64_t count) {
            const int64_t size = bind::length(page, "page");
            if (count < 0) throw std::invalid_argument("count must be >= 0");
            bind::Array<uint32_t> values(static_cast<py::ssize_t>(count));
            uint32_t* out = values.mutable_data();
            const int64_t end = bind::without_gil(
                [&] { return rle_hybrid(page.data(), size, start, bit_width, count, out); });
            return py::make_tuple(values, end);
        },
        py::arg("page"), py::arg("start"), py::arg("bit_width"), py::arg("count"),
        "Decode count values of the RLE / bit-packed hybrid runs at page[start:]: (values as "
        "uint32, the position just past the runs). CorruptData on bad data.");
    m.def(
        "plain_byte_arrays",
        [](const bind::Array<uint8_t>& page, int64_t start, int64_t count) {
            const int64_t size = bind::length(page, "page");
            if (count < 0) throw std::invalid_argument("count must be >= 0");
            bind::Array<int64_t> starts(static_cast<py::ssize_t>(count));
            bind::Array<int64_t> lengths(static_cast<py::ssize_t>(count));
            int64_t* s = starts.mutable_data();
            int64_t* n = lengths.mutable_data();
            const int64_t end = bind::without_gil(
                [&] { return plain_byte_arrays(page.data(), size, start, count, s, n); });
            return py::make_tuple(starts, lengths, end);
        },
        py::arg("page"), py::arg("start"), py::arg("count"),
        "The count PLAIN byte arrays at page[start:]: (starts, lengths as int64, the position "
        "just past them). CorruptData on bad data.");
}
