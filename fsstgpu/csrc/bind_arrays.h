// What every binding file (module.cpp, bind_*.cpp) needs of NumPy arrays: the exact-dtype,
// C-order array type, the dimension check and a vector's copy as an array.
#pragma once

#include <pybind11/numpy.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace fsstgpu_native {
namespace bind {

// Exact dtype, C order (pybind11 casts a safely castable array to a fresh copy).
template <class T>
using Array = pybind11::array_t<T, pybind11::array::c_style>;

// a's length along its first axis, once it has ndim dimensions (else std::invalid_argument)
template <class T>
int64_t length(const Array<T>& a, const char* what, int ndim = 1) {
    if (a.ndim() != ndim) {
        throw std::invalid_argument(std::string(what) + " must be " + std::to_string(ndim) +
                                    "-D, not " + std::to_string(a.ndim()) + "-D");
    }
    return static_cast<int64_t>(a.shape(0));
}

template <class T>
Array<T> to_array(const std::vector<T>& v) {
    Array<T> out(static_cast<pybind11::ssize_t>(v.size()));
    if (!v.empty()) std::copy(v.begin(), v.end(), out.mutable_data());
    return out;
}

}  // namespace bind
}  // namespace fsstgpu_native
