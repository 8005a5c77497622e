// The decoupled look-back of bitplane.cu's pack kernel: each superblock's place in the output (its
// first plane word) and its values' prefix sum, from the statuses of the superblocks before it.
// Included by bitplane.cu after sync.cuh, its typedefs, FULL, VALID and warp_sum.
#pragma once

// Look-back status of superblock t (zeroed by the launcher), four u64: [0..1] its aggregate (its
// own words and value sum), [2..3] its inclusive prefix (those of superblocks 0..t).  A status is
// two words that each carry VALID (bit 63): word 0 the value sum's low 63 bits, word 1 its top bit
// and the word count shifted left by one.  A reader takes a status as soon as both of its words
// are VALID, so it reads them with one relaxed 16-byte load (not atomic as a pair, and it need not
// be), no acquire and no fence: the look-back's latency is what every block waits for (acquire
// loads of a flag, then the sum: 29-32% of copy for 32-bit lengths at 1 GiB; this: 45-48%,
// BENCHMARKS.md section 37).
// Deadlock freedom: superblocks are claimed by atomicAdd tickets, so superblock t is processed by
// a block that started after the blocks of every t' < t; those are resident or done, and each
// waits only on smaller tickets, so the smallest unfinished one never waits: progress for any grid
// size and any residency.  Every spin is still bounded by timeout_ns of %globaltimer (then *err |=
// 128 and the result is garbage, which the launcher reports) so that a broken scheduler or a
// corrupted scratch buffer can never hang the GPU.

__device__ __forceinline__ void publish(u64* st, int inclusive, u64 words, u64 sum) {
    st_relaxed_pair(st + (inclusive ? 2 : 0), (sum & ~VALID) | VALID,
                    (sum >> 63) | (words << 1) | VALID);
}

// Warp 0: (words, sum) of all superblocks before t.
__device__ void look_back(u64* stat, i64 t, int* err, u64 timeout_ns, u64& ex_w, u64& ex_v) {
    const int lane = threadIdx.x & 31;
    ex_w = 0; ex_v = 0;
    u64 t0 = 0;
    for (i64 p = t - 1; p >= 0; p -= 32) {
        const i64 idx = p - lane;
        int state = idx < 0 ? 2 : 0;                   // before superblock 0: inclusive zero
        u64 w = 0, v = 0;
        while (true) {
            if (state == 0) {
                const u64* st = stat + 4 * idx;
                u64 a0, a1, i0, i1;
                ld_relaxed_pair(st + 2, i0, i1);
                ld_relaxed_pair(st, a0, a1);
                if (i0 & i1 & VALID) {
                    state = 2; w = (i1 & ~VALID) >> 1; v = (i0 & ~VALID) | (i1 << 63);
                } else if (a0 & a1 & VALID) {
                    state = 1; w = (a1 & ~VALID) >> 1; v = (a0 & ~VALID) | (a1 << 63);
                }
            }
            const unsigned ready = __ballot_sync(FULL, state != 0);
            const unsigned incl = __ballot_sync(FULL, state == 2);
            if (incl) {
                const int k = __ffs(incl) - 1;         // nearest inclusive prefix
                const unsigned need = k == 31 ? FULL : (2u << k) - 1;
                if ((ready & need) == need) {
                    if (lane > k) { w = 0; v = 0; }
                    ex_w += warp_sum(w); ex_v += warp_sum(v);
                    return;
                }
            } else if (ready == FULL) {
                break;
            }
            if (t0 == 0) t0 = global_ns();
            const bool give_up = *(volatile int*)err != 0 || global_ns() - t0 > timeout_ns;
            if (__any_sync(FULL, give_up)) {
                if (lane == 0) atomicOr(err, 128);
                return;
            }
            __nanosleep(64);
        }
        ex_w += warp_sum(w); ex_v += warp_sum(v);
    }
}
