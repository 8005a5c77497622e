// What every binding file (module.cpp, bind_*.cpp) needs: the exact-dtype, C-order array type,
// the dimension check, a vector's copy as an array, and running codec work without the GIL.
#pragma once

#include <Python.h>
#include <pybind11/numpy.h>

#if defined(__GLIBCXX__)
#include <cxxabi.h>
#endif

#include <algorithm>
#include <chrono>
#include <exception>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace fsstgpu_native {
namespace bind {

// numpy's NPY_ARRAY_ALIGNED: data (and strides) aligned for the dtype
constexpr int kAligned = pybind11::detail::npy_api::NPY_ARRAY_ALIGNED_;

// Exact dtype, C order, aligned: pybind11 casts a safely castable array, and one whose data is
// not aligned for T (an Arrow buffer sliced at an odd byte, a field of a packed record), to a
// fresh copy. The codec reads a T through a T pointer: a misaligned one is undefined behaviour
// (the sanitizer build stops on it), and a vectorised loop may assume the alignment.
template <class T>
using Array = pybind11::array_t<T, pybind11::array::c_style | kAligned>;

// An output written in place (a noconvert argument): exact dtype and C order as Array, but
// never copied, so a misaligned one must be refused (aligned_output), not written to a copy.
template <class T>
using Output = pybind11::array_t<T, pybind11::array::c_style>;

template <class T>
T* aligned_output(Output<T>& a, const char* what) {
    T* p = a.mutable_data();
    if (reinterpret_cast<uintptr_t>(p) % alignof(T)) {
        throw std::invalid_argument(std::string(what) + " must be aligned for its dtype");
    }
    return p;
}

// a's length along its first axis, once it has ndim dimensions (else std::invalid_argument)
template <class T, int Flags>
int64_t length(const pybind11::array_t<T, Flags>& a, const char* what, int ndim = 1) {
    if (a.ndim() != ndim) {
        throw std::invalid_argument(std::string(what) + " must be " + std::to_string(ndim) +
                                    "-D, not " + std::to_string(a.ndim()) + "-D");
    }
    return static_cast<int64_t>(a.shape(0));
}

// A contiguous bytes-like object's bytes, held for as long as this lives (PyBUF_SIMPLE: the
// exporter refuses a buffer that is not contiguous, as for zlib.crc32; that, or an object
// without a buffer, is a TypeError here).
class Bytes {
public:
    explicit Bytes(const pybind11::object& obj) {
        if (PyObject_GetBuffer(obj.ptr(), &view_, PyBUF_SIMPLE) != 0) {
            PyErr_Clear();
            throw pybind11::type_error("data must be a contiguous bytes-like buffer");
        }
    }
    ~Bytes() { PyBuffer_Release(&view_); }
    Bytes(const Bytes&) = delete;
    Bytes& operator=(const Bytes&) = delete;
    const uint8_t* data() const { return static_cast<const uint8_t*>(view_.buf); }
    size_t size() const { return static_cast<size_t>(view_.len); }

private:
    Py_buffer view_{};
};

template <class T>
Array<T> to_array(const std::vector<T>& v) {
    Array<T> out(static_cast<pybind11::ssize_t>(v.size()));
    if (!v.empty()) std::copy(v.begin(), v.end(), out.mutable_data());
    return out;
}

// a as an Array<T>, for an argument taken as any array (to read some dtypes as they are): a
// safely castable dtype is copied as for an Array<T> argument, any other is a TypeError, as there.
template <class T>
Array<T> as_array(const pybind11::array& a, const char* what) {
    try {
        return a.cast<Array<T>>();
    } catch (const pybind11::cast_error&) {
        throw pybind11::type_error(std::string(what) + " has dtype " +
                                   std::string(pybind11::str(a.dtype())) +
                                   ", which does not cast safely to " +
                                   std::string(pybind11::str(pybind11::dtype::of<T>())));
    }
}

// v's copy as an array, v's memory freed once copied: several results copied one after the other
// are held twice one at a time, not all at once (split_size=1's split points and cuts: tens of
// bytes a code).
template <class T>
Array<T> to_array_freed(std::vector<T>& v) {
    Array<T> out = to_array(v);
    std::vector<T>().swap(v);
    return out;
}

// v as an array without a copy: the vector moves to the heap and the array's base (a capsule)
// owns it. For large results (a leaf chunk's decoded bytes): copying them again cost as much as
// producing them.
template <class T>
Array<T> to_array_moved(std::vector<T>&& v) {
    auto* owned = new std::vector<T>(std::move(v));
    pybind11::capsule base(owned, [](void* p) { delete static_cast<std::vector<T>*>(p); });
    return Array<T>(static_cast<pybind11::ssize_t>(owned->size()), owned->data(), base);
}

// The thread that imported the extension (module.cpp sets it): the one that normally finalizes.
inline unsigned long& import_thread() {
    static unsigned long ident = 0;
    return ident;
}

// Called with the GIL released, when the work is done. At interpreter exit Python ends any other
// thread that retakes the GIL (pthread_exit: a forced unwind through the binding's frames, whose
// Python objects are then released without the GIL: a crash, or std::terminate out of a
// noexcept destructor such as pybind11's gil_scoped_release). A daemon thread finishing codec
// work then parks here for good instead; the process is exiting and it touches nothing more.
inline void park_if_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
    const bool finalizing = Py_IsFinalizing();
#else
    const bool finalizing = _Py_IsFinalizing();
#endif
    if (finalizing && PyThread_get_thread_ident() != import_thread()) {
        for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
    }
}

// Retake the GIL. Should finalization have begun since park_if_finalizing looked, Python
// 3.8-3.13 ends this thread inside PyEval_RestoreThread (pthread_exit, GIL not held): its forced
// unwind would run the destructors of the binding's Python objects without the GIL (a segfault,
// 1 exit in 16 on 3.12). It is caught here, and the thread parks for good instead.
inline void restore_gil(PyThreadState* state) {
#if defined(__GLIBCXX__)
    try {
        PyEval_RestoreThread(state);
    } catch (abi::__forced_unwind&) {
        for (;;) std::this_thread::sleep_for(std::chrono::hours(1));  // never rethrown: parked
    }
#else
    PyEval_RestoreThread(state);
#endif
}

// f() with the GIL released; the GIL is retaken in plain code, after park_if_finalizing.
template <class F>
auto without_gil(F&& f) -> decltype(f()) {
    using R = decltype(f());
    PyThreadState* state = PyEval_SaveThread();
    std::exception_ptr error;
    if constexpr (std::is_void_v<R>) {
        try {
            f();
        } catch (...) {
            error = std::current_exception();
        }
        park_if_finalizing();
        restore_gil(state);
        if (error) std::rethrow_exception(error);
    } else {
        std::optional<R> result;
        try {
            result.emplace(f());
        } catch (...) {
            error = std::current_exception();
        }
        park_if_finalizing();
        restore_gil(state);
        if (error) std::rethrow_exception(error);
        return std::move(*result);
    }
}

}  // namespace bind
}  // namespace fsstgpu_native
