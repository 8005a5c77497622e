// string_bounds (bounds.h): one pass over the strings per thread, merged in order; ties keep the
// first index, so the result is the same whatever the thread count.
#include "bounds.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "parallel.h"

namespace fsstgpu_native {
namespace {

struct View {
    const uint8_t* p;
    int64_t len;
};

// bytewise order: a common prefix, then the shorter string first
int compare(View a, View b) {
    const int64_t k = std::min(a.len, b.len);
    const int c = k ? std::memcmp(a.p, b.p, static_cast<size_t>(k)) : 0;
    if (c) return c;
    return (a.len > b.len) - (a.len < b.len);
}

bool valid_at(const uint8_t* validity, int64_t i) {
    return validity == nullptr || ((validity[i >> 3] >> (i & 7)) & 1);
}

}  // namespace

std::pair<int64_t, int64_t> string_bounds(const uint8_t* data, int64_t size,
                                          const int64_t* offsets, int64_t n,
                                          const uint8_t* validity, int threads) {
    if (n < 0) throw std::invalid_argument("string_bounds: negative count");
    if (n == 0) return {-1, -1};
    if (offsets[0] < 0 || offsets[n] > size) {
        throw std::invalid_argument("string_bounds: offsets run outside the data");
    }
    for (int64_t i = 0; i < n; ++i) {  // untrusted: checked before any string is read
        if (offsets[i + 1] < offsets[i]) {
            throw std::invalid_argument("string_bounds: offsets decrease");
        }
    }
    auto view = [&](int64_t i) { return View{data + offsets[i], offsets[i + 1] - offsets[i]}; };
    const int64_t pieces = std::max<int64_t>(1, std::min<int64_t>(threads, n / 65536 + 1));
    std::vector<int64_t> lo(static_cast<size_t>(pieces), -1), hi(static_cast<size_t>(pieces), -1);
    parallel_for(pieces, threads, [&](int64_t p) {
        const int64_t begin = n * p / pieces, end = n * (p + 1) / pieces;
        int64_t best_lo = -1, best_hi = -1;
        for (int64_t i = begin; i < end; ++i) {
            if (!valid_at(validity, i)) continue;
            if (best_lo < 0 || compare(view(i), view(best_lo)) < 0) best_lo = i;
            if (best_hi < 0 || compare(view(i), view(best_hi)) > 0) best_hi = i;
        }
        lo[static_cast<size_t>(p)] = best_lo;
        hi[static_cast<size_t>(p)] = best_hi;
    });
    int64_t best_lo = -1, best_hi = -1;
    for (int64_t p = 0; p < pieces; ++p) {
        const int64_t l = lo[static_cast<size_t>(p)], h = hi[static_cast<size_t>(p)];
        if (l >= 0 && (best_lo < 0 || compare(view(l), view(best_lo)) < 0)) best_lo = l;
        if (h >= 0 && (best_hi < 0 || compare(view(h), view(best_hi)) > 0)) best_hi = h;
    }
    return {best_lo, best_hi};
}

}  // namespace fsstgpu_native
