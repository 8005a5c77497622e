// native.check_splits: CompressedStringArray.validate's check of the split points, the one the
// decoder runs (decode.h).
#include "bind_checks.h"

#include "bind_arrays.h"
#include "decode.h"

namespace py = pybind11;
using namespace fsstgpu_native;

void bind_checks(py::module_& m) {
    m.def(
        "check_splits",
        [](const bind::Array<int64_t>& split_codes, const bind::Array<int64_t>& split_out,
           const py::array& split_table, int64_t ncodes, int64_t total_out, int64_t ntables) {
            const int64_t nc = bind::length(split_codes, "split_codes");
            const int64_t no = bind::length(split_out, "split_out");
            if (py::isinstance<bind::Array<uint16_t>>(split_table)) {  // a column's own
                const auto st = bind::as_array<uint16_t>(split_table, "split_table");
                check_splits(split_codes.data(), split_out.data(), st.data(),
                             bind::length(st, "split_table"), nc, no, ncodes, total_out,
                             ntables);
                return;
            }
            const auto st = bind::as_array<int64_t>(split_table, "split_table");
            const Splits splits{split_codes.data(), split_out.data(), st.data(),
                                bind::length(st, "split_table")};
            check_splits(splits, nc, no, ncodes, total_out, ntables);
        },
        py::arg("split_codes"), py::arg("split_out"), py::arg("split_table"), py::arg("ncodes"),
        py::arg("total_out"), py::arg("ntables"));
}
