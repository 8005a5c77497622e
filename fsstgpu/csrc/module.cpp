// fsstgpu._native: the compiled CPU codec bound to NumPy arrays. fsstgpu/native.py is its
// documented face; nothing else imports this module. This file only declares the bindings to
// pybind11: their bodies (shape checks, copies, the GIL dropped) are in the bind_*.cpp files,
// because this one is compiled plain in the sanitizer test (tests/test_native_codec.py) and
// must hold nothing that reads an array; the codec itself (codec.h) knows no Python.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>

#include "bind_arrays.h"
#include "bind_bounds.h"
#include "bind_checks.h"
#include "bind_codec.h"
#include "bind_crc.h"
#include "bind_pages.h"
#include "bind_tables.h"
#include "bind_plan.h"
#include "bind_scan.h"
#include "bind_train.h"
#include "cpu.h"
#include "errors.h"
#include "matcher.h"

namespace py = pybind11;
using namespace fsstgpu_native;
using namespace fsstgpu_native::bindings;

namespace {

// CorruptData becomes fsstgpu.CorruptDataError once fsstgpu.errors is loaded (always, through
// fsstgpu.native), else ValueError: the sanitizer test loads this module on its own.
void raise_corrupt(const char* message) {
    py::dict modules = py::module_::import("sys").attr("modules");
    if (modules.contains("fsstgpu.errors")) {
        py::object cls = modules["fsstgpu.errors"].attr("CorruptDataError");
        PyErr_SetString(cls.ptr(), message);
    } else {
        PyErr_SetString(PyExc_ValueError, message);
    }
}

}  // namespace

PYBIND11_MODULE(_native, m) {
    m.doc() = "fsstgpu's compiled CPU codec (documented in fsstgpu.native)";
    bind::import_thread() = PyThread_get_thread_ident();
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const CorruptData& e) {
            raise_corrupt(e.what());
        }
    });
    py::class_<Matcher, std::shared_ptr<Matcher>>(m, "Matcher")
        .def(py::init(&make_matcher), py::arg("packed"), py::arg("lengths"))
        .def_property_readonly("nsymbols", [](const Matcher& mt) { return mt.nsymbols; });
    m.def("encode_blocks", &encode_blocks, py::arg("data"), py::arg("offsets"),
          py::arg("block_starts"), py::arg("matchers"), py::arg("threads"));
    m.def("encode_symbols", &encode_symbols, py::arg("data"), py::arg("offsets"),
          py::arg("block_starts"), py::arg("values"), py::arg("lengths"), py::arg("counts"),
          py::arg("threads"));
    // out is written in place: never a converted copy
    m.def("decode_range", &decode_range, py::arg("codes"), py::arg("start"), py::arg("end"),
          py::arg("packed"), py::arg("lens"), py::arg("out").noconvert(), py::arg("out_pos"),
          py::arg("out_end"));
    m.def("compact_tables", &compact_tables, py::arg("tables"));
    m.def("decode_all", &decode_all, py::arg("codes"), py::arg("split_codes"),
          py::arg("split_out"), py::arg("split_table"), py::arg("packed"), py::arg("first"),
          py::arg("lens"), py::arg("total_out"), py::arg("string_ends"), py::arg("check_ends"),
          py::arg("code_offsets"), py::arg("utf8"), py::arg("threads"),
          py::arg("alloc") = py::none());
    m.def("first_invalid_string", &first_invalid<int32_t>, py::arg("data"),
          py::arg("offsets").noconvert(), py::arg("threads"));
    m.def("first_invalid_string", &first_invalid<int64_t>, py::arg("data"), py::arg("offsets"),
          py::arg("threads"));
    m.def("isa", [] { return std::string(isa_name(active_isa())); });
    m.def("best_isa", [] { return std::string(isa_name(best_isa())); });
    bind_train(m);
    bind_scan(m);
    bind_plan(m);
    bind_checks(m);
    bind_bounds(m);
    bind_pages(m);
    bind_tables(m);
    bind_crc(m);
}
