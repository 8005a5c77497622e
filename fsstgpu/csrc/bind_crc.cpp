// fsstgpu._native.crc32 / crc32_many (documented in fsstgpu/native/checksums.py; the CRC in
// crc32.cpp): any contiguous buffer read in place, no GIL held while hashing.
#include "bind_crc.h"

#include <stdexcept>

#include "bind_arrays.h"
#include "cpu.h"
#include "crc32.h"

namespace py = pybind11;
using namespace fsstgpu_native;

namespace {

bool use_clmul() { return active_isa() != Isa::scalar; }  // (FSSTGPU_ISA=scalar: the table)

}  // namespace

void bind_crc(py::module_& m) {
    m.def(
        "crc32",
        [](const py::object& data, uint32_t value) {
            const bind::Bytes bytes(data);
            const bool clmul = use_clmul();
            return bind::without_gil(
                [&] { return crc32(value, bytes.data(), bytes.size(), clmul); });
        },
        py::arg("data"), py::arg("value") = 0);
    m.def(
        "crc32_many",
        [](const py::object& data, const bind::Array<int64_t>& starts,
           const bind::Array<int64_t>& sizes) {
            const bind::Bytes bytes(data);
            const int64_t n = bind::length(starts, "starts");
            if (bind::length(sizes, "sizes") != n) {
                throw std::invalid_argument("starts and sizes hold a value a piece");
            }
            const int64_t* s = starts.data();
            const int64_t* z = sizes.data();
            const auto total = static_cast<int64_t>(bytes.size());
            for (int64_t k = 0; k < n; ++k) {  // (every piece inside the data before any read)
                if (s[k] < 0 || z[k] < 0 || s[k] > total || z[k] > total - s[k]) {
                    throw std::invalid_argument("piece " + std::to_string(k) +
                                                " lies outside the data");
                }
            }
            bind::Array<uint32_t> out(n);
            uint32_t* o = out.mutable_data();
            const bool clmul = use_clmul();
            bind::without_gil([&] {
                for (int64_t k = 0; k < n; ++k) {
                    o[k] = crc32(0, bytes.data() + s[k], size_t(z[k]), clmul);
                }
            });
            return out;
        },
        py::arg("data"), py::arg("starts"), py::arg("sizes"));
    m.def("crc32_clmul", [] { return crc32_has_clmul() && use_clmul(); });
}
