// fsstgpu._native's trainer entry points (documented in fsstgpu/native.py's train section):
// shapes and dtypes checked here, ranges by check_train_range, the GIL dropped while training.
#include "bind_train.h"

#include <pybind11/numpy.h>

#include <stdexcept>
#include <string>

#include "bind_arrays.h"
#include "train.h"

namespace py = pybind11;
using namespace fsstgpu_native;

namespace {

using bind::Array;
using bind::length;
using bind::to_array;

py::tuple to_tuple(const Symbols& s) {
    return py::make_tuple(to_array(s.values), to_array(s.lengths));
}

TrainOptions options(int extra_rounds, int counter_bits) {
    check_extra_rounds(extra_rounds);
    TrainOptions opt;
    opt.extra_rounds = extra_rounds;
    opt.counter_bits = counter_bits;
    return opt;
}

py::tuple train_range_py(const Array<uint8_t>& data, const Array<int64_t>& offsets, int64_t lo,
                         int64_t hi, int64_t target, uint64_t seed, int extra_rounds,
                         int counter_bits) {
    const int64_t size = length(data, "data");
    const int64_t n = length(offsets, "offsets") - 1;
    check_train_range(size, offsets.data(), n, lo, hi, target);
    const TrainOptions opt = options(extra_rounds, counter_bits);
    Symbols s;
    s = bind::without_gil([&] {
        return train_range(data.data(), offsets.data(), lo, hi, target, seed, opt);
    });
    return to_tuple(s);
}

py::tuple train_sample_py(const Array<uint8_t>& bytes, const Array<int64_t>& offsets,
                          int extra_rounds, int counter_bits) {
    const int64_t size = length(bytes, "sample");
    const int64_t n = length(offsets, "sample offsets") - 1;
    if (n < 0) throw std::invalid_argument("sample offsets must hold n + 1 string boundaries");
    check_train_range(size, offsets.data(), n, 0, n, 1);
    const TrainOptions opt = options(extra_rounds, counter_bits);
    // strings index bytes from offsets[0]: bytes[offsets[0]:] is the sample
    const uint8_t* start = bytes.data() + offsets.data()[0];
    Symbols s;
    s = bind::without_gil([&] {
        return train_sample(start, offsets.data(), n, opt);
    });
    return to_tuple(s);
}

py::tuple sample_of_py(const Array<uint8_t>& data, const Array<int64_t>& offsets, int64_t lo,
                       int64_t hi, int64_t target, uint64_t seed) {
    const int64_t size = length(data, "data");
    const int64_t n = length(offsets, "offsets") - 1;
    check_train_range(size, offsets.data(), n, lo, hi, target);
    Sample s;
    s = bind::without_gil([&] {
        return sample_of(data.data(), offsets.data(), lo, hi, target, seed);
    });
    return py::make_tuple(to_array(s.bytes), to_array(s.offsets));
}

py::tuple rank_symbols_py(const Array<uint64_t>& values, const Array<int64_t>& lengths,
                          int nsym, const Array<int64_t>& count1, int min_count,
                          int single_weight) {
    if (length(values, "values") != 512 || length(lengths, "lengths") != 512 ||
        length(count1, "count1") != 512) {
        throw std::invalid_argument("values, lengths and count1 must hold 512 codes");
    }
    return to_tuple(rank_symbols(values.data(), lengths.data(), nsym, count1.data(), min_count,
                                 single_weight));
}

}  // namespace

void bind_train(py::module_& m) {
    m.def("train_range", &train_range_py, py::arg("data"), py::arg("offsets"), py::arg("lo"),
          py::arg("hi"), py::arg("target"), py::arg("seed"), py::arg("extra_rounds"),
          py::arg("counter_bits") = 0);
    m.def("train_sample", &train_sample_py, py::arg("sample"), py::arg("offsets"),
          py::arg("extra_rounds"), py::arg("counter_bits") = 0);
    m.def("sample_of", &sample_of_py, py::arg("data"), py::arg("offsets"), py::arg("lo"),
          py::arg("hi"), py::arg("target"), py::arg("seed"));
    m.def("rank_symbols", &rank_symbols_py, py::arg("values"), py::arg("lengths"),
          py::arg("nsym"), py::arg("count1"), py::arg("min_count"), py::arg("single_weight"));
}
