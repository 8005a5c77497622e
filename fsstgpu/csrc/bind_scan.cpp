// fsstgpu._native's bindings of scan.h, checks_column.h and layout.h (fsstgpu/native.py's
// "scan" section is their face): shapes checked here, the GIL dropped around the loops.
#include "bind_scan.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <optional>
#include <stdexcept>
#include <string>

#include "checks_column.h"
#include "layout.h"
#include "scan.h"

namespace py = pybind11;
using namespace fsstgpu_native;

namespace {

template <class T>
using Array = py::array_t<T, py::array::c_style>;
template <class T>
using Maybe = std::optional<Array<T>>;

template <class T>
int64_t size_of(const Array<T>& a, const char* what) {
    if (a.ndim() != 1) throw std::invalid_argument(std::string(what) + " must be 1-D");
    return static_cast<int64_t>(a.shape(0));
}

void need(bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument(what);
}

template <class T>
Array<T> copy_of(const std::vector<T>& v) {
    Array<T> a(static_cast<py::ssize_t>(v.size()));
    if (!v.empty()) std::copy(v.begin(), v.end(), a.mutable_data());
    return a;
}

py::tuple walk(const Array<uint8_t>& codes, const Array<int64_t>& block_starts,
               const Array<uint8_t>& symlen, const Maybe<int64_t>& code_offsets,
               const Maybe<int64_t>& lengths, int mode, int64_t cut_size, int64_t max_cuts,
               const Maybe<int64_t>& split_codes, const Maybe<int64_t>& split_out,
               int threads) {
    WalkInput in{};
    in.codes = codes.data();
    in.ncodes = size_of(codes, "codes");
    in.mode = mode;
    need(mode >= kCheck && mode <= kLong, "mode must be CHECK, OFFSETS, LENGTHS or LONG");
    if (mode == kOffsets) {
        need(bool(lengths), "OFFSETS needs the lengths");
        in.n = size_of(*lengths, "lengths");
    } else {
        need(bool(code_offsets), "the walk needs code_offsets but in OFFSETS mode");
        in.n = size_of(*code_offsets, "code_offsets") - 1;
        need(in.n >= 0, "code_offsets must hold n + 1 entries");
        in.code_offsets = code_offsets->data();
        if (mode != kLengths) {
            need(bool(lengths) && size_of(*lengths, "lengths") == in.n,
                 "lengths must hold one entry a string");
        }
    }
    if (mode != kLengths) in.lengths = lengths->data();
    in.nblocks = size_of(block_starts, "block_starts") - 1;
    need(in.nblocks >= 0, "block_starts must hold nblocks + 1 entries");
    in.block_starts = block_starts.data();
    need(symlen.ndim() == 2 && symlen.shape(1) == 256 && symlen.shape(0) >= in.nblocks,
         "symlen must be a row of 256 lengths a block");
    in.symlen = symlen.data();
    in.cut_size = cut_size;
    in.max_cuts = max_cuts;
    need(bool(split_codes) == bool(split_out), "split_codes and split_out come together");
    if (split_codes) {
        const int64_t k = size_of(*split_codes, "split_codes");
        need(size_of(*split_out, "split_out") == k, "split_codes and split_out differ in length");
        in.nsplits = std::max<int64_t>(k - 1, 0);
        in.split_codes = split_codes->data();
        in.split_out = split_out->data();
    }
    std::optional<Array<int64_t>> offsets_out, lengths_out;
    if (mode == kOffsets) {
        offsets_out.emplace(in.n + 1);
        in.offsets_out = offsets_out->mutable_data();
    }
    if (mode == kLengths) {
        lengths_out.emplace(in.n);
        in.lengths_out = lengths_out->mutable_data();
    }
    WalkCuts cuts;
    {
        py::gil_scoped_release nogil;
        cuts = walk_codes(in, threads);
    }
    py::object none = py::none();
    return py::make_tuple(offsets_out ? py::object(*offsets_out) : none,
                          lengths_out ? py::object(*lengths_out) : none, copy_of(cuts.code),
                          copy_of(cuts.out), copy_of(cuts.row));
}

py::tuple sums(const Array<int64_t>& lengths, int64_t ncodes, const Array<int64_t>& positions,
               int threads) {
    const int64_t n = size_of(lengths, "lengths"), npos = size_of(positions, "positions");
    Array<int64_t> prefix(npos);
    int64_t* out = prefix.mutable_data();
    int64_t total;
    {
        py::gil_scoped_release nogil;
        total = length_sums(lengths.data(), n, ncodes, positions.data(), npos, out, threads);
    }
    return py::make_tuple(total, prefix);
}

int64_t misfit(const Array<int64_t>& code_offsets, const Array<int64_t>& lengths, int threads) {
    const int64_t n = size_of(lengths, "lengths");
    need(size_of(code_offsets, "code_offsets") == n + 1, "code_offsets must hold n + 1 entries");
    py::gil_scoped_release nogil;
    return first_misfit(code_offsets.data(), lengths.data(), n, threads);
}

int64_t filled_null(const Array<uint8_t>& validity, const Array<int64_t>& lengths,
                    const Maybe<int64_t>& code_offsets, int threads) {
    const int64_t n = size_of(lengths, "lengths");
    need(size_of(validity, "validity") >= (n + 7) / 8, "validity must hold a bit a string");
    need(!code_offsets || size_of(*code_offsets, "code_offsets") == n + 1,
         "code_offsets must hold n + 1 entries");
    const int64_t* co = code_offsets ? code_offsets->data() : nullptr;
    py::gil_scoped_release nogil;
    return first_filled_null(validity.data(), lengths.data(), co, n, threads);
}

void gather_strings(const Array<uint8_t>& data, const Array<int64_t>& starts,
                    const Array<int64_t>& lengths, const Array<int64_t>& out_offsets,
                    Array<uint8_t>& out, int threads) {
    const int64_t n = size_of(starts, "starts");
    need(size_of(lengths, "lengths") >= n && size_of(out_offsets, "out_offsets") >= n,
         "lengths and out_offsets must hold an entry for each start");
    const int64_t ndata = size_of(data, "data"), nout = size_of(out, "out");
    uint8_t* dst = out.mutable_data();
    py::gil_scoped_release nogil;
    gather(data.data(), ndata, starts.data(), lengths.data(), out_offsets.data(), n, dst, nout,
           threads);
}

template <class Out>
void sum_into(const Array<int64_t>& lengths, Array<Out>& out, int threads) {
    const int64_t n = size_of(lengths, "lengths");
    need(size_of(out, "out") == n + 1, "out must hold n + 1 entries");
    Out* dst = out.mutable_data();
    py::gil_scoped_release nogil;
    running_sum(lengths.data(), n, dst, threads);
}

template <class T>
int64_t decrease(const Array<T>& a, int threads) {
    const int64_t n = size_of(a, "a");
    py::gil_scoped_release nogil;
    return first_decrease(a.data(), n, threads);
}

}  // namespace

void bind_scan(py::module_& m) {
    m.def("walk_codes", &walk, py::arg("codes"), py::arg("block_starts"), py::arg("symlen"),
          py::arg("code_offsets"), py::arg("lengths"), py::arg("mode"), py::arg("cut_size"),
          py::arg("max_cuts"), py::arg("split_codes"), py::arg("split_out"), py::arg("threads"));
    m.def("length_sums", &sums, py::arg("lengths"), py::arg("ncodes"), py::arg("positions"),
          py::arg("threads"));
    m.def("first_misfit", &misfit, py::arg("code_offsets"), py::arg("lengths"),
          py::arg("threads"));
    m.def("first_filled_null", &filled_null, py::arg("validity"), py::arg("lengths"),
          py::arg("code_offsets"), py::arg("threads"));
    m.def("count_set_bits", [](const Array<uint8_t>& bitmap) {
        const int64_t n = size_of(bitmap, "bitmap");
        py::gil_scoped_release nogil;
        return count_set_bits(bitmap.data(), n);
    }, py::arg("bitmap"));
    // out is written in place: never a converted copy
    m.def("gather", &gather_strings, py::arg("data"), py::arg("starts"), py::arg("lengths"),
          py::arg("out_offsets"), py::arg("out").noconvert(), py::arg("threads"));
    m.def("running_sum", &sum_into<int32_t>, py::arg("lengths"), py::arg("out").noconvert(),
          py::arg("threads"));
    m.def("running_sum", &sum_into<int64_t>, py::arg("lengths"), py::arg("out").noconvert(),
          py::arg("threads"));
    m.def("first_decrease", &decrease<int32_t>, py::arg("a").noconvert(), py::arg("threads"));
    m.def("first_decrease", &decrease<int64_t>, py::arg("a"), py::arg("threads"));
}
