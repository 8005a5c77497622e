// native.page_headers and native.delta_binary_packed: the host half of reading Parquet column
// chunks raw (fsstgpu/native/parquet.py documents them).
#include "bind_pages.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "bind_arrays.h"
#include "parquet_delta.h"
#include "parquet_leaves.h"
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

template <class T>
py::object array_or_none(const std::vector<T>& v, bool wanted) {
    if (!wanted) return py::none();
    return bind::to_array(v);
}

// pages: (npages, 3) int64 rows of (type, num_values, encoding); bodies: one uint8 array a
// page (its payload decompressed). The arrays stay referenced by the caller during the call.
py::tuple leaf_rows(int kind, int64_t n, const bind::Array<int64_t>& pages,
                    const py::list& bodies) {
    if (kind < 0 || kind > int(LeafKind::kIndices)) throw std::invalid_argument("bad kind");
    const int64_t npages = bind::length(pages, "pages", 2);
    if (pages.shape(1) != 3 || int64_t(py::len(bodies)) != npages) {
        throw std::invalid_argument("pages must be (npages, 3) with one body a page");
    }
    std::vector<bind::Array<uint8_t>> held;
    held.reserve(size_t(npages));
    std::vector<LeafPage> list(static_cast<size_t>(npages));
    for (int64_t p = 0; p < npages; ++p) {
        held.push_back(bodies[size_t(p)].cast<bind::Array<uint8_t>>());
        LeafPage& page = list[size_t(p)];
        page.type = pages.at(p, 0);
        page.num_values = pages.at(p, 1);
        page.encoding = pages.at(p, 2);
        page.size = bind::length(held.back(), "body");
        page.body = held.back().data();
    }
    LeafRows out;
    const LeafKind k = LeafKind(kind);
    bind::without_gil([&] { decode_leaf(k, n, list, out); });
    return py::make_tuple(
        bind::to_array(out.row_bits), bind::to_array(out.value_bits), out.row_nulls,
        out.value_nulls, array_or_none(out.offsets, k == LeafKind::kBytes),
        array_or_none(out.data, k == LeafKind::kBytes),
        array_or_none(out.values, k == LeafKind::kInt32 || k == LeafKind::kInt64),
        array_or_none(out.index, k == LeafKind::kIndices), bind::to_array(out.entries));
}

py::tuple hybrid_values(const bind::Array<uint8_t>& buf, int64_t pos, int64_t end, int w,
                        int64_t count) {
    const int64_t size = bind::length(buf, "buf");
    if (pos < 0 || pos > end || end > size) throw std::invalid_argument("pos, end outside buf");
    if (count < 0) throw std::invalid_argument("count must be >= 0");
    std::vector<uint32_t> out(static_cast<size_t>(count));
    const int64_t past = bind::without_gil(
        [&] { return rle_hybrid(buf.data(), pos, end, w, count, out.data()); });
    return py::make_tuple(bind::to_array(out), past);
}

}  // namespace

void bind_pages(py::module_& m) {
    m.def("page_headers", &page_rows, py::arg("chunk"), py::arg("start"), py::arg("end"));
    m.def("delta_binary_packed", &delta_values, py::arg("buf"), py::arg("pos"), py::arg("end"),
          py::arg("max_values"));
    m.def("leaf_rows", &leaf_rows, py::arg("kind"), py::arg("n"), py::arg("pages"),
          py::arg("bodies"));
    m.def("rle_hybrid", &hybrid_values, py::arg("buf"), py::arg("pos"), py::arg("end"),
          py::arg("w"), py::arg("count"));
}
