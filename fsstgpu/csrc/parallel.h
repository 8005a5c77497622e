// Numbered tasks on std::threads: the caller plus threads - 1 helpers claim tasks from one
// atomic counter, so a helper that starts late just finds fewer left (as
// fsstgpu/parallel.py's run_tasks does). The first exception a task throws stops the claiming
// and is rethrown on the caller's thread.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace fsstgpu_native {

template <class Fn>
void parallel_for(int64_t ntasks, int threads, Fn&& fn) {
    if (ntasks <= 0) return;
    const int64_t helpers = std::min<int64_t>(std::max(threads, 1), ntasks) - 1;
    std::atomic<int64_t> next{0};
    std::exception_ptr error;
    std::mutex error_lock;
    auto work = [&] {
        for (int64_t k; (k = next.fetch_add(1)) < ntasks;) {
            try {
                fn(k);
            } catch (...) {
                std::lock_guard<std::mutex> hold(error_lock);
                if (!error) error = std::current_exception();
                next.store(ntasks);
            }
        }
    };
    std::vector<std::thread> pool;
    pool.reserve(static_cast<size_t>(helpers));
    try {
        for (int64_t t = 0; t < helpers; ++t) pool.emplace_back(work);
    } catch (const std::system_error&) {
        // no more threads to be had: the ones started and the caller do the work
    }
    work();
    for (auto& t : pool) t.join();
    if (error) std::rethrow_exception(error);
}

}  // namespace fsstgpu_native
