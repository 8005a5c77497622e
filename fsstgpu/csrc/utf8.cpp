// UTF-8 validation of a column (fsstgpu/utf8.py's contract): tasks of about 256 KB of string
// bytes, each reporting its first invalid string; the smallest index wins.
#include <algorithm>
#include <vector>

#include "checks.h"
#include "codec.h"
#include "kernels.h"
#include "parallel.h"

namespace fsstgpu_native {

namespace {
constexpr int64_t kTaskBytes = 256 << 10;
}

template <class Off>
int64_t first_invalid_string(const uint8_t* data, int64_t size, const Off* off, int64_t n,
                             int threads) {
    if (n <= 0) return -1;
    check_offsets(off, n, size, "offsets", threads);
    const Kernels& kern = kernels(active_isa());
    const uint64_t* dfa = utf8_dfa();
    const int64_t total = int64_t(off[n]) - int64_t(off[0]);
    const int64_t ntasks = std::max<int64_t>(1, std::min(n, total / kTaskBytes));
    std::vector<int64_t> bounds(static_cast<size_t>(ntasks + 1));
    for (int64_t t = 0; t < ntasks; ++t) {
        const int64_t target =
            int64_t(off[0]) + static_cast<int64_t>((__int128)total * t / ntasks);
        bounds[t] = std::lower_bound(off, off + n, Off(target)) - off;
    }
    bounds[0] = 0;
    bounds[ntasks] = n;
    std::vector<int64_t> bad(static_cast<size_t>(ntasks), -1);
    parallel_for(ntasks, threads, [&](int64_t t) {
        if (bounds[t] < bounds[t + 1]) {
            bad[t] = sizeof(Off) == 4
                         ? kern.utf8_32(data, reinterpret_cast<const int32_t*>(off),
                                        bounds[t], bounds[t + 1], dfa)
                         : kern.utf8_64(data, reinterpret_cast<const int64_t*>(off),
                                        bounds[t], bounds[t + 1], dfa);
        }
    });
    for (int64_t b : bad) {
        if (b >= 0) return b;  // tasks are in string order
    }
    return -1;
}

template int64_t first_invalid_string<int32_t>(const uint8_t*, int64_t, const int32_t*, int64_t,
                                               int);
template int64_t first_invalid_string<int64_t>(const uint8_t*, int64_t, const int64_t*, int64_t,
                                               int);

}  // namespace fsstgpu_native
