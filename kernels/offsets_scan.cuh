// The Arrow offsets scan of fsst_decode.cu (offsets_one_pass, and the planned kernel's tiles).
// Included after fsst_decode.cu's typedefs and sync.cuh.
#pragma once

// Arrow offsets from the uncompressed lengths, for one column or a batch: column c's lengths are
// len[col_first[c] : col_first[c + 1]] and its n_c + 1 offsets (offsets[0] = 0, offsets[i + 1] =
// sum(len[0..i])) go to out + col_obyte[c], 4 or 8 bytes each (bit 0 of col_wide[c]); bit 1
// marks a column that continues the one before it (a row group of a file's column: its slot
// starts at that column's last offset, which is its first, so it writes no leading 0 and its
// base is the first column's, and their offsets come out joined).  One launch: a
// single-pass scan with decoupled look-back (Merrill and Garland, "Single-pass Parallel Prefix
// Scan with Decoupled Look-back", 2016) over tiles of 4096 lengths (256 threads x 16), each tile
// loaded and stored through shared memory so that both global accesses are coalesced, the
// column's base (col_base[c]: the sum of every length before it) subtracted.  Lengths come in
// their narrowest unsigned type (L); sums are int64.  (It replaced three launches, tile sums, one
// block scanning them and the tile scan: 1.3-2x faster calls up to 64 MiB, BENCHMARKS.md
// section 15.)
#define FSST_SCAN_TILE 4096

__device__ __forceinline__ i64 warp_inclusive_scan(i64 v) {
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        const i64 up = __shfl_up_sync(0xffffffffu, v, d);
        if (lane >= d) v += up;
    }
    return v;
}

// The column of length i: the last c with col_first[c] <= i (binary search; columns are few).
__device__ __forceinline__ int column_of(const i64 *__restrict__ col_first, int ncols, i64 i) {
    int lo = 0, hi = ncols - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) >> 1;
        if (col_first[mid] <= i) lo = mid; else hi = mid - 1;
    }
    return lo;
}

// Each block claims the next tile by ticket (status[ntiles]: a tile's predecessors were claimed
// by blocks that started before it, resident or done, so the smallest unfinished tile never
// waits), publishes its tile's sum, finds the sum of every tile before it from its
// predecessors' words (warp 0, 32 tiles a step), publishes its inclusive sum, and writes its
// offsets.  status (ntiles + 1 words) must be zero at the launch.  A status word is a flag in
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

struct ScanSmem {
    i64 tile[FSST_SCAN_TILE + FSST_SCAN_TILE / 16];
    i64 ws[8];
    i64 t, before;
};

// One tile of the scan by a block of 256 threads (each sums its 16 lengths, read twice from
// shared memory: no array of them in registers, so the planned kernel below keeps its 48).
template <typename L>
__device__ __forceinline__ void scan_tile(
    const L *__restrict__ len, i64 n, u64 *__restrict__ status, i64 ntiles,
    const i64 *__restrict__ col_first, const i64 *__restrict__ col_base,
    const i64 *__restrict__ col_obyte, const u8 *__restrict__ col_wide, int ncols,
    u8 *__restrict__ out, int *__restrict__ err, u64 timeout_ns, ScanSmem &sm) {
    if (threadIdx.x == 0) sm.t = (i64)atomicAdd(status + ntiles, 1ull);
    __syncthreads();
    const i64 t = sm.t;
    const i64 base = t * FSST_SCAN_TILE;
    if (t == 0) {  // every column's first offset (also those of empty columns)
        for (int c = threadIdx.x; c < ncols; c += 256) {
            if (col_wide[c] & 2) continue;  // its first offset is the last of the one before
            if (col_wide[c] & 1) *reinterpret_cast<i64 *>(out + col_obyte[c]) = 0;
            else *reinterpret_cast<int *>(out + col_obyte[c]) = 0;
        }
    }
    for (int j = threadIdx.x; j < FSST_SCAN_TILE; j += 256) {
        const i64 i = base + j;
        sm.tile[j + (j >> 4)] = i < n ? (i64)len[i] : 0;
    }
    __syncthreads();
    i64 *mine = sm.tile + threadIdx.x * 17;
    i64 s = 0;
#pragma unroll
    for (int k = 0; k < 16; ++k) s += mine[k];
    const i64 incl = warp_inclusive_scan(s);
    if ((threadIdx.x & 31) == 31) sm.ws[threadIdx.x >> 5] = incl;
    __syncthreads();
    if (threadIdx.x < 32) {
        i64 agg = 0;
        for (int w = 0; w < 8; ++w) agg += sm.ws[w];
        if (threadIdx.x == 0) {
            st_relaxed(status + t,
                       (t == 0 ? FSST_SCAN_INCL : FSST_SCAN_AGG) | ((u64)agg & FSST_SCAN_VALUE));
        }
        const i64 before = t == 0 ? 0 : scan_look_back(status, t, err, timeout_ns);
        if (threadIdx.x == 0) {
            if (t > 0) st_relaxed(status + t, FSST_SCAN_INCL | ((u64)(before + agg) & FSST_SCAN_VALUE));
            sm.before = before;
        }
    }
    __syncthreads();
    i64 run = sm.before + incl - s;
    for (int w = 0; w < (int)(threadIdx.x >> 5); ++w) run += sm.ws[w];
#pragma unroll
    for (int k = 0; k < 16; ++k) {
        run += mine[k];
        mine[k] = run;
    }
    __syncthreads();
    for (int j = threadIdx.x; j < FSST_SCAN_TILE; j += 256) {
        const i64 i = base + j;
        if (i >= n) break;
        const int c = ncols == 1 ? 0 : column_of(col_first, ncols, i);
        const i64 value = sm.tile[j + (j >> 4)] - col_base[c];
        const i64 slot = i - col_first[c] + 1;
        if (col_wide[c] & 1) reinterpret_cast<i64 *>(out + col_obyte[c])[slot] = value;
        else reinterpret_cast<int *>(out + col_obyte[c])[slot] = (int)value;
    }
}

template <typename L>
__global__ void __launch_bounds__(256) offsets_one_pass(
    const L *__restrict__ len, i64 n, u64 *__restrict__ status, i64 ntiles,
    const i64 *__restrict__ col_first, const i64 *__restrict__ col_base,
    const i64 *__restrict__ col_obyte, const u8 *__restrict__ col_wide, int ncols,
    u8 *__restrict__ out, int *__restrict__ err, u64 timeout_ns) {
    __shared__ ScanSmem sm;
    scan_tile(len, n, status, ntiles, col_first, col_base, col_obyte, col_wide, ncols, out, err,
              timeout_ns, sm);
}
