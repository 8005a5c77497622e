// The plain layout's loops of layout.h.
#include "layout.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "checks_column.h"
#include "kernels.h"
#include "parallel.h"

namespace fsstgpu_native {

void gather(const uint8_t* data, int64_t ndata, const int64_t* starts, const int64_t* lengths,
            const int64_t* out_offsets, int64_t n, uint8_t* out, int64_t nout, int threads) {
    const int64_t bad = first_over_chunks(n, threads, [&](int64_t lo, int64_t hi) -> int64_t {
        for (int64_t i = lo; i < hi; ++i) {
            const int64_t s = starts[i], len = lengths[i], o = out_offsets[i];
            if (s < 0 || len < 0 || o < 0 || s > ndata - len || o > nout - len) return i;
        }
        return -1;
    });
    if (bad >= 0) {
        throw std::invalid_argument("string " + std::to_string(bad) +
                                    " lies outside its source or destination");
    }
    first_over_chunks(n, threads, [&](int64_t lo, int64_t hi) -> int64_t {
        for (int64_t i = lo; i < hi; ++i) {
            if (lengths[i]) std::memcpy(out + out_offsets[i], data + starts[i], size_t(lengths[i]));
        }
        return -1;
    });
}

template <class Out>
void running_sum(const int64_t* lengths, int64_t n, Out* out, int threads) {
    // one pass on one thread; two (sums, then offsets) on several
    const int64_t ntasks = tasks_for(n, threads);
    auto lo = [&](int64_t t) { return int64_t((__int128)n * t / ntasks); };
    std::vector<uint64_t> base(static_cast<size_t>(ntasks + 1), 0);
    if (ntasks > 1) {
        parallel_for(ntasks, threads, [&](int64_t t) {
            uint64_t sum = 0;
            const int64_t end = lo(t + 1);  // (in a loop test: a 128-bit division a string)
            for (int64_t i = lo(t); i < end; ++i) sum += uint64_t(lengths[i]);
            base[t + 1] = sum;
        });
        for (int64_t t = 0; t < ntasks; ++t) base[t + 1] += base[t];
    }
    out[0] = 0;
    parallel_for(ntasks, threads, [&](int64_t t) {
        uint64_t sum = base[t];
        // bounds hoisted: the stores to out may alias n, so a bound in the loop test was a
        // 128-bit division a string (7x numpy's cumsum on one thread)
        const int64_t end = lo(t + 1);
        const int64_t* const in = lengths;
        Out* const dst = out;
        for (int64_t i = lo(t); i < end; ++i) {
            sum += uint64_t(in[i]);
            dst[i + 1] = Out(int64_t(sum));
        }
    });
}

void differences(const int64_t* offsets, int64_t n, int64_t* out, int threads) {
    // numpy's diff is one thread: 77 ms of a 16-core compress of 28.6 M strings
    first_over_chunks(n, threads, [&](int64_t lo, int64_t hi) -> int64_t {
        const int64_t* const in = offsets;
        int64_t* const dst = out;  // bounds in locals: the stores may alias them
        for (int64_t i = lo; i < hi; ++i) dst[i] = int64_t(uint64_t(in[i + 1]) - uint64_t(in[i]));
        return -1;
    });
}

void first_at_or_after(const int64_t* offsets, int64_t n, int64_t step, int64_t count,
                       int64_t* out, int threads) {
    const int64_t size = n + 1;
    // tasks by the offsets a search crosses, not by targets: 255 K targets of a 1 GiB column
    // cross 28.6 M offsets, a cache miss or more each (one task took 40 ms on the H200 host)
    const int64_t ntasks = std::max<int64_t>(1, std::min(count, tasks_for(size, threads)));
    parallel_for(ntasks, threads, [&](int64_t task) {
        const int64_t lo = int64_t((__int128)count * task / ntasks);
        const int64_t hi = int64_t((__int128)count * (task + 1) / ntasks);
        if (lo >= hi) return;
        // the task's first target by a binary search, each next one galloping from there
        const int64_t* const a = offsets;
        int64_t i = std::lower_bound(a, a + size, step * (lo + 1)) - a;
        for (int64_t j = lo; j < hi; ++j) {
            const int64_t t = step * (j + 1);
            int64_t gap = 1, from = i;  // a[from - 1] < t (or from == 0) holds for any t here
            while (from + gap - 1 < size && a[from + gap - 1] < t) {
                from += gap;
                gap *= 2;
            }
            i = std::lower_bound(a + from, a + std::min(size, from + gap - 1), t) - a;
            out[j] = i;
        }
    });
}

uint64_t narrow_lengths(const int64_t* lengths, int64_t n, void* out, int width, Isa isa,
                        int threads) {
    const Kernels& kern = kernels(isa);
    const int64_t ntasks = tasks_for(n, threads);
    if (ntasks <= 1) return n > 0 ? kern.narrow(lengths, 0, n, out, width) : 0;
    std::vector<uint64_t> ors(static_cast<size_t>(ntasks), 0);
    parallel_for(ntasks, threads, [&](int64_t t) {
        ors[t] = kern.narrow(lengths, int64_t((__int128)n * t / ntasks),
                             int64_t((__int128)n * (t + 1) / ntasks), out, width);
    });
    uint64_t acc = 0;
    for (uint64_t o : ors) acc |= o;
    return acc;
}

template <class T>
int64_t first_decrease(const T* a, int64_t n, int threads) {
    // pairs (a[i], a[i + 1]) for i < n - 1
    return first_over_chunks(n - 1, threads, [&](int64_t lo, int64_t hi) {
        return first_in_blocks(lo, hi, [&](int64_t i) { return a[i + 1] < a[i]; });
    });
}

template void running_sum<int32_t>(const int64_t*, int64_t, int32_t*, int);
template void running_sum<int64_t>(const int64_t*, int64_t, int64_t*, int);
template int64_t first_decrease<int32_t>(const int32_t*, int64_t, int);
template int64_t first_decrease<int64_t>(const int64_t*, int64_t, int);

}  // namespace fsstgpu_native
