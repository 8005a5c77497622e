// native.page_headers and native.delta_binary_packed: the host half of reading Parquet column
// chunks raw (fsstgpu/native/parquet.py documents them).
#include "bind_pages.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "bind_arrays.h"
#include "parquet_delta.h"
#include "parquet_pages.h"

namespace py = pybind11;
using namespace fsstgpu_native;

namespace {

// One row of kPageFields int64 a page, in a fresh (npages, kPageFields) array.
bind::Array<int64_t> page_rows(const bind::Array<uint8_t>& chunk, int64_t start, int64_t end) {
    const int64_t size = bind::length(chunk, "chunk");
    std::vector<int64_t> rows;
    bind::without_gil([&] { page_headers(chunk.data(), size, start, end, rows); });
    const int64_t npages = int64_t(rows.size()) / kPageFields;
    bind::Array<int64_t> out({npages, int64_t(kPageFields)});
    std::copy(rows.begin(), rows.end(), out.mutable_data());
    return out;
}

py::tuple delta_values(const bind::Array<uint8_t>& buf, int64_t pos, int64_t end,
                       int64_t max_values) {
    const int64_t size = bind::length(buf, "buf");
    if (max_values < 0) throw std::invalid_argument("max_values must be >= 0");
    std::vector<int64_t> values;
    const int64_t past = bind::without_gil(
        [&] { return delta_binary_packed(buf.data(), size, pos, end, max_values, values); });
    return py::make_tuple(bind::to_array(values), past);
}

}  // namespace

void bind_pages(py::module_& m) {
    m.def("page_headers", &page_rows, py::arg("chunk"), py::arg("start"), py::arg("end"));
    m.def("delta_binary_packed", &delta_values, py::arg("buf"), py::arg("pos"), py::arg("end"),
          py::arg("max_values"));
}
