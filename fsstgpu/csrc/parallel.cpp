// The process-wide pool behind parallel_for (parallel.h).
//
// A call is a Job on the caller's stack, linked into the pool's list while it is open. Parked
// workers are woken for it; a worker joins a job only by claiming one of its tasks (under the
// pool lock, so the caller, once it has unlinked the job, waits only for workers that hold a
// task, never for one that is yet to be scheduled). Tasks are then claimed from the job's
// atomic counter without the lock. Joining and leaving take the pool lock, which orders every
// write a worker's tasks made before the caller's return (the counter itself can be relaxed).
//
// Lifetime: the pool is allocated once and never destroyed, its workers detached and never
// joined, so nothing runs at static destruction (a worker parked on a destroyed condition
// variable would crash the exit) and parked workers never keep the process alive. Fork: the
// child has none of the workers, and the pool's lock and condition variable may be in any
// state (held by a thread that is gone, with waiters that are gone); a pthread_atfork handler
// gives the child a fresh pool and never touches the old one (kept reachable, not freed).
#include "parallel.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

namespace fsstgpu_native {
namespace pool {

namespace {

constexpr int kMaxWorkers = kMaxThreads - 1;  // a `threads` beyond 256 gets 256 threads

thread_local bool in_task = false;

struct Job {
    Task task;
    void* fn;
    int64_t ntasks;
    std::atomic<int64_t> next{0};  // the next task to claim
    int slots = 0;     // workers that may still join (guarded by the pool lock)
    int running = 0;   // workers that hold one of its tasks (guarded by the pool lock)
    bool waiting = false;  // the caller waits for running to reach 0 (guarded)
    std::condition_variable finished;
    std::mutex error_lock;
    std::exception_ptr error;
    Job* prev = nullptr;  // the pool's list of open jobs (guarded)
    Job* after = nullptr;

    // Claim and run tasks until none are left; `first` is one already claimed (or ntasks).
    void work(int64_t first) noexcept {
        for (int64_t k = first; k < ntasks; k = next.fetch_add(1, std::memory_order_relaxed)) {
            try {
                task(fn, k);
            } catch (...) {
                std::lock_guard<std::mutex> hold(error_lock);
                if (!error) error = std::current_exception();
                next.store(ntasks, std::memory_order_relaxed);  // stop the claiming
            }
        }
    }
};

struct Pool {
    std::mutex lock;
    std::condition_variable wake;  // parked workers
    Job* open = nullptr;           // jobs with slots for workers (guarded)
    Job* last = nullptr;
    int workers = 0;               // started (guarded)
    int parked = 0;                // waiting on `wake` (guarded)
    Pool* parent = nullptr;        // the pool this one replaced in a forked child

    void link(Job& j) {
        j.prev = last;
        (last ? last->after : open) = &j;
        last = &j;
    }

    void unlink(Job& j) {
        (j.prev ? j.prev->after : open) = j.after;
        (j.after ? j.after->prev : last) = j.prev;
        j.prev = j.after = nullptr;
    }

    // The first open job with a slot, and one of its tasks claimed for the caller (a worker).
    Job* claim(int64_t& k) {
        for (Job* j = open; j; j = j->after) {
            if (j->slots <= 0) continue;
            k = j->next.fetch_add(1, std::memory_order_relaxed);
            if (k < j->ntasks) return j;
        }
        return nullptr;
    }

    [[noreturn]] void serve() {
        in_task = true;  // parallel_for from inside a task runs inline
        std::unique_lock<std::mutex> hold(lock);
        for (;;) {
            int64_t k;
            Job* j = claim(k);
            if (!j) {
                ++parked;
                wake.wait(hold);
                --parked;
                continue;
            }
            --j->slots;
            ++j->running;
            hold.unlock();
            j->work(k);
            hold.lock();
            // notified under the lock: the caller cannot return (and free the job) before
            if (--j->running == 0 && j->waiting) j->finished.notify_one();
        }
    }

    // Start workers until there are `want` (as many as can be had); under the lock.
    void grow(int want) {
        if (workers >= want) return;
        // workers take no asynchronous signals (Python handles them on its main thread);
        // faults stay deliverable, so a crash in a task is reported where it happened
        sigset_t all, before;
        sigfillset(&all);
        for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS}) sigdelset(&all, sig);
        pthread_sigmask(SIG_SETMASK, &all, &before);
        try {
            for (; workers < want; ++workers) {
                std::thread worker([this] { serve(); });
                // named by its creator, so it has its name before the call returns
                pthread_setname_np(worker.native_handle(), "fsstgpu-pool");
                worker.detach();
            }
        } catch (const std::exception&) {
            // no more threads to be had (system_error, bad_alloc): the ones started and the
            // callers do the work
        }
        pthread_sigmask(SIG_SETMASK, &before, nullptr);
    }
};

std::atomic<Pool*> current{nullptr};

void after_fork_in_child() {
    // the old pool's workers are gone and its lock may be held by one of them: a fresh pool on
    // next use, the old one left untouched (reachable from the new one, so not a leak)
    Pool* old = current.load(std::memory_order_relaxed);
    if (old) {
        current.store(nullptr, std::memory_order_relaxed);
        static Pool* retired = nullptr;
        old->parent = retired;
        retired = old;
    }
}

Pool& the_pool() {
    Pool* p = current.load(std::memory_order_acquire);
    if (p) return *p;
    static std::atomic<bool> fork_handler{false};
    if (!fork_handler.exchange(true)) pthread_atfork(nullptr, nullptr, after_fork_in_child);
    Pool* fresh = new Pool;
    if (current.compare_exchange_strong(p, fresh, std::memory_order_acq_rel)) return *fresh;
    delete fresh;  // another thread made it first
    return *p;
}

}  // namespace

bool inside_task() noexcept { return in_task; }

void run(int64_t ntasks, int threads, Task task, void* fn) {
    Pool& p = the_pool();
    Job j;
    j.task = task;
    j.fn = fn;
    j.ntasks = ntasks;
    j.slots = static_cast<int>(std::min<int64_t>(std::min(threads - 1, kMaxWorkers), ntasks - 1));
    int wake = 0, parked = 0;
    {
        std::lock_guard<std::mutex> hold(p.lock);
        p.grow(j.slots);
        p.link(j);
        parked = p.parked;
        wake = std::min(j.slots, parked);
    }
    // woken outside the lock, so a worker does not wake only to wait for it
    if (wake > 0 && wake == parked) {
        p.wake.notify_all();
    } else {
        for (int w = 0; w < wake; ++w) p.wake.notify_one();
    }
    in_task = true;
    j.work(j.next.fetch_add(1, std::memory_order_relaxed));
    in_task = false;
    {
        std::unique_lock<std::mutex> hold(p.lock);
        p.unlink(j);
        j.slots = 0;
        if (j.running > 0) {
            j.waiting = true;
            j.finished.wait(hold, [&] { return j.running == 0; });
        }
    }
    if (j.error) std::rethrow_exception(j.error);
}

}  // namespace pool
}  // namespace fsstgpu_native
