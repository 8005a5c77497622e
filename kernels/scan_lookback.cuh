// The decoupled look-back of a single-pass scan (Merrill and Garland, "Single-pass Parallel
// Prefix Scan with Decoupled Look-back", 2016), shared by fsst_decode.cu's offsets scan
// (offsets_scan.cuh) and fsst_encode.cu's one-pass encode: a tile's status word, a warp's
// inclusive scan and the look-back over its predecessors' words.  Included after the file's
// typedefs (i64, u64) and sync.cuh.
#pragma once

__device__ __forceinline__ i64 warp_inclusive_scan(i64 v) {
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        const i64 up = __shfl_up_sync(0xffffffffu, v, d);
        if (lane >= d) v += up;
    }
    return v;
}

// A tile's owner (a block, or a warp) claims it by ticket (an atomicAdd on a counter beside the
// statuses: a tile's predecessors were claimed by owners that started before it, resident or
// done, so the smallest unfinished tile never waits), publishes its tile's sum, finds the sum of
// every tile before it from its predecessors' words (one warp, 32 tiles a step) and publishes
// its inclusive sum.  The status words must be zero at the launch.  A status word is a flag in
// its top two bits (FSST_SCAN_AGG: the tile's sum; FSST_SCAN_INCL: the sum up to the tile's end)
// over the value, so one 64-bit store publishes both and one load reads both: nothing else is
// read through a status, so the stores and loads are relaxed (no acquire or release ordering to
// wait for; H200, 2026-12-04: 2-4% faster calls at 16 and 64 MiB, even at 1 GiB).  Every wait is
// bounded by timeout_ns of %globaltimer: then *err gets FSST_ERR_SCAN_TIMEOUT (never in a correct
// launch).
#define FSST_SCAN_AGG (1ull << 62)
#define FSST_SCAN_INCL (2ull << 62)
#define FSST_SCAN_VALUE ((1ull << 62) - 1)
#define FSST_ERR_SCAN_TIMEOUT 64

// Warp 0: the sum of every tile before t (t > 0), from the status words of tiles t-1, t-2, ...
__device__ i64 scan_look_back(u64 *status, i64 t, int *err, u64 timeout_ns) {
    const int lane = threadIdx.x & 31;
    const u64 t0 = global_ns();
    i64 before = 0;
    for (i64 p = t - 1;; p -= 32) {
        const i64 idx = p - lane;
        u64 st = idx < 0 ? FSST_SCAN_INCL : 0;  // before tile 0: an inclusive zero
        while (true) {
            if (!(st >> 62)) st = ld_relaxed(status + idx);
            if (__all_sync(0xffffffffu, (st >> 62) != 0)) break;
            const int late = lane == 0 && global_ns() - t0 > timeout_ns;
            if (__shfl_sync(0xffffffffu, late, 0)) {
                if (lane == 0) atomicOr(err, FSST_ERR_SCAN_TIMEOUT);
                return before;
            }
        }
        const unsigned incl = __ballot_sync(0xffffffffu, (st >> 63) != 0);
        const int last = incl ? __ffs(incl) - 1 : 31;  // the nearest inclusive word ends the walk
        i64 v = lane <= last ? (i64)(st & FSST_SCAN_VALUE) : 0;
#pragma unroll
        for (int d = 16; d > 0; d >>= 1) v += __shfl_xor_sync(0xffffffffu, v, d);
        before += v;
        if (incl) return before;
    }
}

