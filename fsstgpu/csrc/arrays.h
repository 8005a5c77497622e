// Checked views of the NumPy arrays the entry points take: exact dtype, C order, 1-D.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace fsstgpu_native {

namespace py = pybind11;

template <class T>
using Array = py::array_t<T, py::array::c_style>;

template <class T>
int64_t length_1d(const Array<T>& a, const char* what) {
    if (a.ndim() != 1) {
        throw std::invalid_argument(std::string(what) + " must be 1-D, not " +
                                    std::to_string(a.ndim()) + "-D");
    }
    return static_cast<int64_t>(a.shape(0));
}

// Throw std::invalid_argument unless a[0..n] runs non-decreasing from >= 0 to <= limit.
template <class T>
void check_offsets(const T* a, int64_t n, int64_t limit, const char* what) {
    if (a[0] < 0 || int64_t(a[n]) > limit) {
        throw std::invalid_argument(std::string(what) + " run from " + std::to_string(a[0]) +
                                    " to " + std::to_string(a[n]) + ", outside 0.." +
                                    std::to_string(limit));
    }
    for (int64_t i = 0; i < n; ++i) {
        if (a[i + 1] < a[i]) {
            throw std::invalid_argument(std::string(what) + " decrease at " + std::to_string(i));
        }
    }
}

}  // namespace fsstgpu_native
