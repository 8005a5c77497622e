// Numbered tasks on a process-wide pool of threads: the caller plus up to threads - 1 pool
// workers claim tasks from one atomic counter, so a worker that wakes late (or is still busy
// with another caller's tasks) just finds fewer left, and the caller never waits for a thread
// that has not started a task. The first exception a task throws stops the claiming and is
// rethrown on the caller's thread.
//
// The workers are started on first use (as many as the largest `threads` asked for, less one)
// and parked between calls: starting and joining a thread per call cost ~20 us a thread, and
// the codec makes many small calls (block planning encodes 64 KB pieces hundreds of times a
// column). Calls from inside a task run inline, on the thread running the task: nesting never
// waits on the pool. parallel.cpp has the pool; callers need only this template.
#pragma once

#include <cstdint>
#include <memory>
#include <type_traits>

namespace fsstgpu_native {

// The most threads a call runs on (the caller and kMaxThreads - 1 pool workers): a larger
// `threads` gets this many.
constexpr int kMaxThreads = 256;

// The input sizes below which the size-gated loops stay on one thread (checks_column.h's
// tasks_for, assemble_splits' row reads) and their task sizes are divided by this: 1 in every
// build but the ThreadSanitizer test's (tests/test_native_tsan.py), whose corpus column of
// 1.4 M strings is under the 2**21 entries at which those loops go parallel: without it TSan
// never saw their parallel paths.
#ifndef FSSTGPU_TASK_SIZE_DIVISOR
#define FSSTGPU_TASK_SIZE_DIVISOR 1
#endif
constexpr int64_t kTaskSizeDivisor = FSSTGPU_TASK_SIZE_DIVISOR;
static_assert(kTaskSizeDivisor >= 1 && kTaskSizeDivisor <= 1024 &&
                  (kTaskSizeDivisor & (kTaskSizeDivisor - 1)) == 0,
              "FSSTGPU_TASK_SIZE_DIVISOR: a power of two, at most 1024");

namespace pool {

using Task = void (*)(void* fn, int64_t k);

// Run task(fn, k) for k in [0, ntasks) on the caller and up to threads - 1 pool workers;
// ntasks >= 2 and threads >= 2.
void run(int64_t ntasks, int threads, Task task, void* fn);

// Whether this thread is running a task of the pool (a worker, or a caller inside its tasks).
bool inside_task() noexcept;

}  // namespace pool

template <class Fn>
void parallel_for(int64_t ntasks, int threads, Fn&& fn) {
    if (ntasks <= 0) return;
    if (threads <= 1 || ntasks == 1 || pool::inside_task()) {
        for (int64_t k = 0; k < ntasks; ++k) fn(k);
        return;
    }
    using F = std::remove_reference_t<Fn>;
    pool::run(
        ntasks, threads, [](void* f, int64_t k) { (*static_cast<F*>(f))(k); },
        const_cast<void*>(static_cast<const void*>(std::addressof(fn))));
}

}  // namespace fsstgpu_native
