// Argument checks shared by the entry points: every offset the kernels will follow is checked
// here first.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace fsstgpu_native {

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
