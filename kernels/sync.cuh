// Device-wide synchronisation shared by the kernels whose blocks wait on one another: the
// decoupled look-backs of fsst_decode.cu (the offsets scan) and bitplane.cu (pack), and the ring
// of rotate.cu.  Loads with acquire and stores with release at GPU scope for rotate's ring's
// 32-bit flags (what a waiter reads after the flag is what the publisher wrote before it),
// relaxed ones for words that carry their own flag (the look-backs: a status read whole needs no
// ordering, and an acquire on every poll was their largest cost), and %globaltimer, which bounds
// every wait (a kernel never spins forever, whatever the data).
#pragma once

__device__ __forceinline__ unsigned long long global_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ unsigned long long ld_relaxed(const unsigned long long* p) {
    unsigned long long v;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ void st_release(unsigned* p, unsigned v) {
    asm volatile("st.release.gpu.global.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void st_relaxed(unsigned long long* p, unsigned long long v) {
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" :: "l"(p), "l"(v) : "memory");
}

// Two 64-bit words in one 16-byte access (relaxed, GPU scope).  Not atomic as a pair: use it for
// words that each say by themselves whether they are written (bitplane.cu's look-back status).
__device__ __forceinline__ void ld_relaxed_pair(const unsigned long long* p, unsigned long long& a,
                                                unsigned long long& b) {
    asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];" : "=l"(a), "=l"(b) : "l"(p)
                 : "memory");
}
__device__ __forceinline__ void st_relaxed_pair(unsigned long long* p, unsigned long long a,
                                                unsigned long long b) {
    asm volatile("st.relaxed.gpu.global.v2.u64 [%0], {%1, %2};" :: "l"(p), "l"(a), "l"(b)
                 : "memory");
}
