// fsstgpu._native.rle_hybrid / delta_binary_packed (documented in fsstgpu/native/pages.py):
// the counts checked against the bytes before anything is allocated, the decoding without the
// GIL.
#include "bind_pages.h"

#include <pybind11/numpy.h>

#include <stdexcept>
#include <string>

#include "bind_arrays.h"
#include "errors.h"
#include "parquet_pages.h"

namespace py = pybind11;
using namespace fsstgpu_native;

namespace {

void check_count(int64_t count, int64_t most, const char* what) {
    if (count < 0 || count > most) {
        throw CorruptData(std::string(what) + ": " + std::to_string(count) +
                          " values cannot be in these bytes (at most " + std::to_string(most) +
                          ")");
    }
}

py::tuple rle_hybrid_py(const bind::Array<uint8_t>& data, int bit_width, int64_t count) {
    const int64_t size = bind::length(data, "data");
    // a run header's byte can stand for at most 2**63 values only through a varint: bound the
    // allocation by what a real run can hold, a repeated value's 2**31 a header byte (a writer
    // never makes more), so a forged count is refused before it is allocated
    check_count(count, size * (int64_t{1} << 24), "RLE / bit-packed data");
    bind::Array<uint32_t> out(count);
    int64_t end = 0;
    bind::without_gil([&] {
        end = decode_rle_hybrid(data.data(), size, bit_width, count, out.mutable_data());
    });
    return py::make_tuple(out, end);
}

py::tuple delta_binary_packed_py(const bind::Array<uint8_t>& data, int64_t count) {
    const int64_t size = bind::length(data, "data");
    // a block of up to 2**20 values takes at least one byte (its min delta)
    check_count(count, size * (int64_t{1} << 20) + 1, "DELTA_BINARY_PACKED data");
    bind::Array<int64_t> out(count);
    int64_t end = 0;
    bind::without_gil([&] {
        end = decode_delta_binary_packed(data.data(), size, count, out.mutable_data());
    });
    return py::make_tuple(out, end);
}

}  // namespace

void bind_pages(py::module_& m) {
    m.def("rle_hybrid", &rle_hybrid_py, py::arg("data"), py::arg("bit_width"),
          py::arg("count"));
    m.def("delta_binary_packed", &delta_binary_packed_py, py::arg("data"), py::arg("count"));
}
