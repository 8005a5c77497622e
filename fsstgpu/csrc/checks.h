// Argument checks shared by the entry points: every offset the kernels will follow is checked
// here first.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "layout.h"

namespace fsstgpu_native {

// Throw std::invalid_argument unless a[0..n] runs non-decreasing from >= 0 to <= limit, the
// order checked on `threads` (first_decrease: a column's offsets are checked before every pass
// over them, and one core reading 230 MB of them, 28 M strings, was a serial 20-40 ms of a
// 16-core compress).
template <class T>
void check_offsets(const T* a, int64_t n, int64_t limit, const char* what, int threads = 1) {
    if (a[0] < 0 || int64_t(a[n]) > limit) {
        throw std::invalid_argument(std::string(what) + " run from " + std::to_string(a[0]) +
                                    " to " + std::to_string(a[n]) + ", outside 0.." +
                                    std::to_string(limit));
    }
    const int64_t at = first_decrease(a, n + 1, threads);
    if (at >= 0) {
        throw std::invalid_argument(std::string(what) + " decrease at " + std::to_string(at));
    }
}

}  // namespace fsstgpu_native
