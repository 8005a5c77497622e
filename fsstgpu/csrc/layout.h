// The plain string layout's loops (fsstgpu/arrow_layout.py's kernels): gathering strings,
// offsets from lengths and back, the first decrease of a sequence. Parallel, with the serial loop's
// result whatever the thread count.
#pragma once

#include <cstdint>

#include "cpu.h"

namespace fsstgpu_native {

// Copies data[starts[i]:starts[i] + lengths[i]] to out[out_offsets[i]:...] for i < n; every
// range is checked first (std::invalid_argument naming the first string outside its array).
void gather(const uint8_t* data, int64_t ndata, const int64_t* starts, const int64_t* lengths,
            const int64_t* out_offsets, int64_t n, uint8_t* out, int64_t nout, int threads);

// out[0] = 0, out[i + 1] = lengths[0] + ... + lengths[i], wrapping as int64 then stored as Out.
template <class Out>
void running_sum(const int64_t* lengths, int64_t n, Out* out, int threads);

// out[i] = offsets[i + 1] - offsets[i] for i < n (wrapping as int64): the lengths of strings
// given by n + 1 offsets.
void differences(const int64_t* offsets, int64_t n, int64_t* out, int threads);

// For each target t = step * (j + 1), j < count: the first i in [0, n] with offsets[i] >= t
// (n + 1 when none), into out[j]: numpy's searchsorted(offsets, targets, "left") of the split
// planner's targets, each found by galloping from the one before (binary searches of the whole
// array missed the cache at every step: 16 ms of a 268 MB column's split plan on one thread).
// Any offsets give an answer inside [0, n + 1]; non-decreasing ones, searchsorted's.
void first_at_or_after(const int64_t* offsets, int64_t n, int64_t step, int64_t count,
                       int64_t* out, int threads);

// out[i] = lengths[i] for i < n, out `width` bytes an entry (1, 2, 4 or 8) keeping each
// value's low bytes, and the bitwise OR of every lengths[i] as uint64: every length fits the
// width (and none is negative) exactly when the OR does. One pass over the lengths where a max
// and then a narrowing copy read them twice (a GPU batch's narrowed lengths, HostBatch).
uint64_t narrow_lengths(const int64_t* lengths, int64_t n, void* out, int width, Isa isa,
                        int threads);

// The first i with a[i + 1] < a[i], or -1.
template <class T>
int64_t first_decrease(const T* a, int64_t n, int threads);

}  // namespace fsstgpu_native
