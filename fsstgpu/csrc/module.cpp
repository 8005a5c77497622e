// fsstgpu._native: the compiled CPU codec. fsstgpu/native.py is its documented face; nothing
// else imports this module directly.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>

#include "cpu.h"
#include "entry.h"
#include "errors.h"
#include "matcher.h"

namespace py = pybind11;
using namespace fsstgpu_native;

namespace {

std::shared_ptr<Matcher> make_matcher(const Array<uint64_t>& packed,
                                      const Array<uint8_t>& lengths) {
    const int64_t n = length_1d(packed, "packed");
    if (length_1d(lengths, "lengths") != n) {
        throw std::invalid_argument("packed and lengths differ in length");
    }
    if (n > kMaxSymbols) {
        throw std::invalid_argument("a symbol table holds at most 255 symbols, not " +
                                    std::to_string(n));
    }
    auto m = std::make_shared<Matcher>();
    build_matcher(*m, packed.data(), lengths.data(), static_cast<int>(n));
    return m;
}

// CorruptData becomes fsstgpu.CorruptDataError when fsstgpu.errors is loaded (always, through
// fsstgpu.native), else ValueError: the sanitizer test loads this module on its own.
void raise_corrupt(const char* message) {
    PyObject* cls = PyExc_ValueError;
    py::dict modules = py::module_::import("sys").attr("modules");
    if (modules.contains("fsstgpu.errors")) {
        py::object errors = modules["fsstgpu.errors"];
        cls = errors.attr("CorruptDataError").ptr();
        PyErr_SetString(cls, message);  // errors keeps the class alive
        return;
    }
    PyErr_SetString(cls, message);
}

}  // namespace

PYBIND11_MODULE(_native, m) {
    m.doc() = "fsstgpu's compiled CPU codec (documented in fsstgpu.native)";
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
    // out is written in place: never a converted copy
    m.def("decode_range", &decode_range, py::arg("codes"), py::arg("start"), py::arg("end"),
          py::arg("packed"), py::arg("lens"), py::arg("out").noconvert(), py::arg("out_pos"),
          py::arg("out_end"));
    m.def("decode_all", &decode_all, py::arg("codes"), py::arg("split_codes"),
          py::arg("split_out"), py::arg("split_table"), py::arg("packed"), py::arg("lens"),
          py::arg("total_out"), py::arg("threads"));
    m.def("first_invalid_string", &first_invalid_string<int32_t>, py::arg("data"),
          py::arg("offsets").noconvert(), py::arg("threads"));
    m.def("first_invalid_string", &first_invalid_string<int64_t>, py::arg("data"),
          py::arg("offsets"), py::arg("threads"));
    m.def("isa", [] { return std::string(isa_name(active_isa())); });
    m.def("best_isa", [] { return std::string(isa_name(best_isa())); });
}
