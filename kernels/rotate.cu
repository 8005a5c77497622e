// In-place rotation of a byte range (std::rotate), one pass per kernel: every byte the kernel
// moves is read once from the array (or from a small saved copy) and written once.  Launched by
// rotate.py, which also turns a rotation into a plan of passes (one pass unless a lane pass's
// remainder is too big to save, see plan()).
//
// Shared machinery
// ----------------
// * Work items ("tickets") are claimed with atomicAdd on a counter, so tickets are claimed in
//   increasing order and only by blocks that are running; a ticket says what the block does,
//   never its blockIdx (the hardware may start blocks in any order).  Ticket -> work is closed
//   form.
// * A block publishes "ticket j has read what its neighbour overwrites" in a ring of RING flag
//   slots: slot j % RING holds the largest published ticket + 1 of that residue.  Before
//   publishing, ticket j waits until ticket j - RING has published (so a slot's value only grows
//   and "slot >= t + 1" proves that ticket t has published).
// * Memory ordering: loads are cp.async copies into shared memory; every thread waits for its own
//   (cp.async.wait_group), then __syncthreads, then one thread issues __threadfence and a
//   st.release.gpu of the flag.  The bytes are in shared memory by then, so later stores by other
//   blocks cannot change them.  A waiter spins with ld.acquire.gpu, then __syncthreads, then its
//   threads store.
// * Bounded waits: every spin also watches *err and a %globaltimer deadline (timeout_ns).  Past
//   the deadline the waiter sets *err = 1 and stops waiting; every later wait sees *err and
//   returns at once, so the kernel always finishes (with a garbage result) and the host raises.
// * Deadlock freedom (any grid size, any residency): every wait is for a ticket SMALLER than the
//   waiter's own, and a block publishes before any wait other than the ring-reuse one (j - RING).
//   Induction on the ticket number: if every ticket < j publishes, ticket j's block gets past its
//   ring wait, publishes, gets past its other waits and finishes.  Tickets smaller than j were
//   claimed by blocks that were running (atomicAdd order) and resident blocks make progress, so
//   no grid size, occupancy or scheduling order can stall a waiter; blocks that are not resident
//   hold no ticket and block nobody.
// * Loads move aligned 16-byte words (cp.async.cg); a word holding at least one byte of a valid
//   range lies inside that range's allocation, so no word can fault; its other bytes are unused.
//   Stores write 16-byte aligned words inside a range and single bytes at its ragged ends (the
//   bytes next to them belong to other blocks).
//
// rotate_short (left rotation by d <= SHORT_DMAX; a right rotation is the mirror image):
//   new[i] = old[i + d], bytes past nb wrap (old [nb, nb + d) = old [0, d) is read from a copy
//   made before the kernel).  Tiles are `tile` bytes on 16-byte aligned addresses.  The
//   destination is cut into nchunks chunks of whole tiles, ticket j = chunk j.  A block streams
//   its chunk [c0, c1) RIGHT TO LEFT through a ring of NS tile slots in shared memory: it loads
//   old [c0, c1 + d) tile by tile (each old byte once, cp.async, `PREFETCH` tiles ahead) and stores
//   destination tile [p0, p1) from old [p0 + d, p1 + d) as soon as that is in the ring (tiles
//   right of p0, loaded earlier; NS >= PREFETCH + 1 + ceil(d / tile) keeps them there).  Its own
//   chunk is only overwritten by itself, after it loaded the bytes.  Across chunks: the first
//   tiles it loads are the next chunk's head [c1, c1 + d); then it publishes.  Before storing a
//   tile that starts below c0 + d (its own head, which chunk j - 1 loads first) it waits for
//   ticket j - 1, normally long published.  Chunk 0's head [0, d) is read only from the copy.
//   Right rotation: chunk = nchunks - 1 - j, tiles left to right, head [c0 - d, c0).
//
// rotate_column (lane streaming, d > SHORT_DMAX): rotate [0, nb) left (or right) by D bytes,
//   nb = L*D + S.  The range is L lanes of D bytes and a remainder of S bytes (left: lanes from
//   0, remainder at the end; right: lanes from the end, remainder at 0).  Lane l's bytes go to
//   lane l-1 at the same offset, the remainder's go to lane L-1 (left: offsets [0, S), right:
//   [D - S, D)), lane 0's go to "the top" shifted by S (left: +S, right: -S; offsets past lane
//   L-1 land in the remainder).  A ticket owns a column [x0, x0 + W) of the lanes and a segment
//   of them: destination lanes [l0, l1) (the G segments of a column split lanes 0..L-2), source
//   lanes l0+1..l1.  It loads source lane l1 first (chain mode: and lane 0, kept for the wrap)
//   and publishes: segment g+1's first store overwrites lane l1, so it waits for ticket j - 1
//   (segment g, same column) first.  Then it streams: load lane l+1 (PREFETCH lanes ahead),
//   store it into lane l.  The last segment (l1 = L-1) writes the top of its column:
//   * stash mode (D + S small): old lane 0 and the remainder were saved to scratch; the last
//     segment writes lane L-1 and the remainder at its column's offsets from the copies, after
//     its own load of lane L-1.  No other cross-block hazard: nobody reads lane 0 or the
//     remainder from the array.
//   * chain mode (G = 1, only the remainder saved): the block kept old lane 0 in shared memory
//     and stores it to lane L-1 at offsets [x0 + S, x0 + W + S) (right: - S) once the columns
//     owning them have loaded their lane L-1 (published).  Tickets go by decreasing column (right:
//     increasing), so those are smaller tickets (or its own column, loaded already).

// No headers (NVRTC): the fixed-width types are spelled out; identical to <cstdint> on Linux.
typedef unsigned char uint8_t;
typedef unsigned int uint32_t;

typedef long long i64;
typedef unsigned long long u64;
typedef unsigned long long uptr;   // pointer as an integer

#include "sync.cuh"

#ifndef THREADS
#define THREADS 256                // threads per block (rotate.py may compile the short pass wider)
#endif
#define RING 4096
#ifndef PREFETCH
#define PREFETCH 3                 // tiles (short) / lanes (column) loaded ahead per block
#endif
#define NO_WRAP (1LL << 40)        // ring size meaning "a linear buffer"
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 4               // resident blocks per SM the register budget allows
#endif

__device__ __forceinline__ i64 imin(i64 a, i64 b) { return a < b ? a : b; }
__device__ __forceinline__ i64 imax(i64 a, i64 b) { return a > b ? a : b; }

// Thread-level.  Returns once ticket t has published, *err is set, or the deadline passed (then
// it sets *err).
__device__ __forceinline__ void wait_ticket(const unsigned* ring, u64 t, unsigned* err,
                                            u64 timeout_ns) {
    const unsigned* slot = ring + (t % RING);
    if (ld_acquire(slot) >= (unsigned)(t + 1)) return;
    const u64 t0 = global_ns();
    while (ld_acquire(slot) < (unsigned)(t + 1)) {
        if (*(const volatile unsigned*)err) return;
        if (global_ns() - t0 > timeout_ns) { atomicOr(err, 1u); return; }
        __nanosleep(32);
    }
}

// Thread 0, after the __syncthreads that follows the block's completed loads.
__device__ __forceinline__ void publish(unsigned* ring, u64 j, unsigned* err, u64 timeout_ns) {
    if (j >= RING) wait_ticket(ring, j - RING, err, timeout_ns);
    __threadfence();
    st_release(ring + (j % RING), (unsigned)(j + 1));
}

__device__ __forceinline__ u64 claim(unsigned* ring) {
    __shared__ u64 ticket;
    if (threadIdx.x == 0) ticket = atomicAdd(ring + RING, 1u);
    __syncthreads();
    return ticket;
}

__device__ __forceinline__ unsigned smem_u32(const void* p) {
    u64 s;
    asm("cvta.to.shared.u64 %0, %1;" : "=l"(s) : "l"(p));
    return (unsigned)s;
}

__device__ __forceinline__ void cp_async16(void* sm, uptr g) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(smem_u32(sm)), "l"(g)
                 : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
    asm volatile("cp.async.commit_group;" ::: "memory");
}
template <int N> __device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;" :: "n"(N) : "memory");
}

// Fast paths.  Written for any range (64-bit offsets, per-word checks: copy or array, ring wrap,
// misalignment picked by selects), a pass cost ~140-160 instructions a thread per 16 bytes moved
// in Nsight Compute, 1-2% of them the copies themselves.  But within one store the source's
// misalignment is the same for every aligned destination word (the shift mod 16), so the body of
// every store realigns through a template (tile_store, through store_words) with 32-bit offsets
// (a ring is at most the opt-in shared memory, a linear buffer a lane's few KiB); and the short
// pass's interior tiles, whole and every word from the array, also load that way (tile_load).

// tile t's words, all from the array, into ring slot `slot` (byte offset of the slot)
__device__ __forceinline__ void tile_load(uint8_t* smem, unsigned R, uptr g, unsigned slot,
                                          unsigned nw) {
    for (unsigned i = threadIdx.x; i < nw; i += THREADS)
        cp_async16(smem + slot + 16 * i, g + 16 * (uptr)i);
    if (slot == 0 && threadIdx.x == 0) cp_async16(smem + R, g);   // slot 0's first word, again
}

// nw aligned 16-byte words to g from the ring: word i from ring bytes [o + 16i, o + 16i + 16)
// (mod R), o % 16 == 4 * Q + sh / 8 (Q < 0: o is aligned)
template <int Q>
__device__ __forceinline__ void tile_store(uint8_t* g, const uint8_t* sm, unsigned R, unsigned o,
                                           unsigned sh, unsigned nw) {
    unsigned s = (o & ~15u) + 16 * threadIdx.x;
    for (unsigned i = threadIdx.x; i < nw; i += THREADS, s += 16 * THREADS) {
        if (s >= R) s -= R;                            // 16 * THREADS <= R: one wrap at most
        const uint4 lo = *reinterpret_cast<const uint4*>(sm + s);
        uint4 r;
        if (Q < 0) {
            r = lo;
        } else {
            const uint4 hi = *reinterpret_cast<const uint4*>(sm + s + 16);   // sm[R..] repeats
            const uint32_t w[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
            r.x = __funnelshift_r(w[Q], w[Q + 1], sh);
            r.y = __funnelshift_r(w[Q + 1], w[Q + 2], sh);
            r.z = __funnelshift_r(w[Q + 2], w[Q + 3], sh);
            r.w = __funnelshift_r(w[Q + 3], w[Q + 4], sh);
        }
        __stcs(reinterpret_cast<uint4*>(g) + i, r);
    }
}

// tile_store for the misalignment of o (the same for every word of one store)
__device__ __forceinline__ void store_words(uint8_t* g, const uint8_t* sm, unsigned R, unsigned o,
                                            unsigned nw) {
    const unsigned mis = o & 15, sh = (mis & 3) * 8;
    switch (mis == 0 ? -1 : (int)(mis >> 2)) {
        case -1: tile_store<-1>(g, sm, R, o, sh, nw); break;
        case 0: tile_store<0>(g, sm, R, o, sh, nw); break;
        case 1: tile_store<1>(g, sm, R, o, sh, nw); break;
        case 2: tile_store<2>(g, sm, R, o, sh, nw); break;
        default: tile_store<3>(g, sm, R, o, sh, nw); break;
    }
}

// Store len bytes to global g from shared buffer sm (R bytes, circular: byte k of the source is
// sm[(o + k) mod R], 0 <= o < R, len <= R; when the buffer wraps, its first 16 bytes are
// repeated at sm[R, R + 16) so that a misaligned word may run past the end).
__device__ void store_from(uint8_t* g, const uint8_t* sm, i64 R, i64 o, i64 len) {
    if (len <= 0) return;
    i64 head = (16 - ((uptr)g & 15)) & 15;
    if (head > len) head = len;
    const i64 words = (len - head) >> 4;
    for (i64 k = threadIdx.x; k < head; k += THREADS) {
        const i64 s = o + k;
        g[k] = sm[s >= R ? s - R : s];
    }
    if (words > 0) {
        // the aligned body: its source's misalignment is the same for every word, so the
        // realignment is a template (tile_store), with 32-bit offsets (a linear buffer is a
        // lane's few KiB, a ring at most the opt-in shared memory)
        // (a ring starts 16-byte aligned; a linear buffer may not: offsets from its word)
        const unsigned smis = (unsigned)((uptr)sm & 15);
        const uint8_t* sma = sm - smis;
        i64 ob = o + head;
        ob = ob >= R ? ob - R : ob;
        ob += smis;
        store_words(g + head, sma, R == NO_WRAP ? 0xFFFFFFF0u : (unsigned)R, (unsigned)ob,
                    (unsigned)words);
    }
    for (i64 k = head + (words << 4) + threadIdx.x; k < len; k += THREADS) {
        const i64 s = o + k;
        g[k] = sm[s >= R ? s - R : s];
    }
}

// Issue cp.async copies of the aligned words holding global [g, g + len) into sm (word 0 = the
// word holding g, so byte g + k lands at sm[(g & 15) + k]).  Does not commit.
__device__ __forceinline__ void load_words(uint8_t* sm, uptr g, i64 len) {
    if (len <= 0) return;
    const uptr w0 = g & ~(uptr)15;
    const i64 nw = (i64)(((g + (uptr)len + 15) & ~(uptr)15) - w0) >> 4;
    for (i64 i = threadIdx.x; i < nw; i += THREADS) cp_async16(sm + 16 * i, w0 + 16 * i);
}

// Whole-block move of len bytes (global src -> global dst, any alignment) through shared buffer
// buf.  Every cp.async of the thread is waited for, so call it only with no loads in flight that
// later code expects to be pending.
__device__ void staged_move(uint8_t* dst, const uint8_t* src, i64 len, uint8_t* buf) {
    if (len <= 0) return;
    load_words(buf, (uptr)src, len);
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
    store_from(dst, buf, NO_WRAP, (i64)((uptr)src & 15), len);
    __syncthreads();
}

// ================================================================================================
// rotate_short
// ================================================================================================
//
// Virtual positions v (old byte v of the range; left: v in [0, nb + d), bytes >= nb from the
// copy; right: v in [-d, nb), bytes < 0 from the copy).  The copy lives at sbase + v, aligned
// like the array (base + v), and holds every word that has a byte outside [0, nb) (left:
// [nb - 16, nb + d + 16), right: [-d - 16, 16)).  Tile tau (biased so that it is >= 0 for
// v >= -d) is [tau * tile - al0 - R, (tau + 1) * tile - al0 - R), R = NS * tile, and lives in
// ring slot tau % NS: byte v at ring offset (v + al0 + R) mod R, 16-byte words on 16-byte
// offsets.  Slot 0's first word is repeated after the ring (a misaligned store reads past its
// end).
//
// Per block, steps s = 0 .. nsteps-1 load the tiles of [lo, hi) (left: [c0, c1 + d) right to
// left; right: [c0 - d, c1) left to right).  Step s: wait for tile s's cp.async group; (thread 0
// waits for ticket j - 1 at the step whose store first touches the neighbour's head); barrier;
// issue the loads of step s + PREFETCH into its slot (last read by a store of step
// s + PREFETCH - NS < s, finished before the barrier; the store of step s reads tiles s - m,
// m <= ceil(d / tile), and NS >= PREFETCH + 1 + ceil(d / tile) keeps them apart); thread 0
// publishes after the step that completes the head; store the tile's destination part.

__device__ __forceinline__ i64 tile_of(i64 v, i64 tile, i64 al0, i64 R) {
    return (v + al0 + R) / tile;
}

// Issue the loads of tile t's part of [lo, hi) into its slot (does not commit).
__device__ __forceinline__ void short_load(uint8_t* smem, i64 R, uptr base, uptr sbase, i64 nb,
                                           int left, i64 lo, i64 hi, i64 t, i64 tile, int NS) {
    const i64 al0 = (i64)(base & 15);
    const i64 ts = t * tile - al0 - R;                 // tile start (16-byte aligned address)
    const i64 q0 = imax(lo, ts), q1 = imin(hi, ts + tile);
    const i64 v0 = (i64)(((base + (uptr)q0) & ~(uptr)15) - base);
    const i64 nw = (i64)(((base + (uptr)q1 + 15) & ~(uptr)15) - (base + (uptr)v0)) >> 4;
    uint8_t* slot = smem + (t % NS) * tile + (v0 - ts);
    for (i64 i = threadIdx.x; i < nw; i += THREADS) {
        const i64 v = v0 + 16 * i;
        const bool from_copy = left ? (v + 16 > nb) : (v < 0);
        const uptr src = (from_copy ? sbase : base) + (uptr)v;
        cp_async16(slot + 16 * i, src);
        if (slot + 16 * i == smem) cp_async16(smem + R, src);   // slot 0's first word, again
    }
}

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
rotate_short(uint8_t* a, i64 nb, i64 d, int left, uptr sbase, unsigned* ring, i64 tile, int NS,
             i64 chunk_tiles, i64 nchunks, unsigned* err, u64 timeout_ns) {
    extern __shared__ __align__(16) uint8_t smem[];
    const i64 R = (i64)NS * tile;
    const uptr base = (uptr)a;
    const i64 al0 = (i64)(base & 15);
    const u64 j = claim(ring);
    const i64 ch = left ? (i64)j : nchunks - 1 - (i64)j;
    const i64 c0 = imax(0, ch * chunk_tiles * tile - al0);
    const i64 c1 = imin(nb, (ch + 1) * chunk_tiles * tile - al0);
    const i64 lo = left ? c0 : c0 - d, hi = left ? c1 + d : c1;
    const i64 ta = tile_of(lo, tile, al0, R), tb = tile_of(hi - 1, tile, al0, R);
    const i64 nsteps = tb - ta + 1;
    // head: the steps before the first destination tile; wait: the first step whose tile meets
    // the neighbour's head (left: starts below c0 + d; right: ends above c1 - d)
    const i64 e = left ? tb - tile_of(c1 - 1, tile, al0, R) : tile_of(c0, tile, al0, R) - ta;
    const i64 pub_step = imax(e - 1, 0);
    const bool waits = left ? ch > 0 : ch < nchunks - 1;
    const i64 wait_step = left ? tb - tile_of(imin(c0 + d, c1) - 1, tile, al0, R)
                               : tile_of(imax(c1 - d, c0), tile, al0, R) - ta;

    // step s -> tile, its loaded range and its destination part
    #define STEP_TILE(s) (left ? tb - (s) : ta + (s))
    #define TILE_START(t) ((t) * tile - al0 - R)

    for (int s = 0; s < PREFETCH; ++s) {
        if (s < nsteps)
            short_load(smem, R, base, sbase, nb, left, lo, hi, STEP_TILE(s), tile, NS);
        cp_async_commit();
    }
    // interior tiles: loads whose words all come from the array, stores of whole tiles (their
    // ring offset: (t * tile +- d) mod R)
    const i64 fast_lo = left ? lo : imax(lo, 0);      // right: words below 0 are the copy's
    const i64 fast_hi = left ? imin(hi, nb) : hi;     // left: words reaching past nb are
    const unsigned nw = (unsigned)(tile >> 4), uR = (unsigned)R, utile = (unsigned)tile;
    const unsigned dm = (unsigned)(left ? d % R : R - d % R);      // + d (left), - d (right)
    for (i64 s = 0; s < nsteps; ++s) {
        cp_async_wait<PREFETCH - 1>();                 // this thread's copies of step s are done
        if (waits && s == wait_step && threadIdx.x == 0) wait_ticket(ring, j - 1, err, timeout_ns);
        __syncthreads();                               // everybody's are (and the wait is over)
        if (s == pub_step && threadIdx.x == 0) publish(ring, j, err, timeout_ns);
        const i64 sn = s + PREFETCH;
        if (sn < nsteps) {
            const i64 tn = STEP_TILE(sn);
            if (TILE_START(tn) >= fast_lo && TILE_START(tn + 1) <= fast_hi)
                tile_load(smem, uR, base + (uptr)TILE_START(tn),
                          ((unsigned)tn % (unsigned)NS) * utile, nw);
            else
                short_load(smem, R, base, sbase, nb, left, lo, hi, tn, tile, NS);
        }
        cp_async_commit();
        const i64 t = STEP_TILE(s);
        if (TILE_START(t) >= c0 && TILE_START(t + 1) <= c1) {
            unsigned o = ((unsigned)t % (unsigned)NS) * utile + dm;
            if (o >= uR) o -= uR;
            store_words(a + TILE_START(t), smem, uR, o, nw);
            continue;
        }
        const i64 p0 = imax(c0, TILE_START(t)), p1 = imin(c1, TILE_START(t + 1));
        if (p0 < p1) {
            const i64 src = left ? p0 + d : p0 - d;
            store_from(a + p0, smem, R, (src + al0 + R) % R, p1 - p0);
        }
    }
    cp_async_wait<0>();                                // (only empty groups are left)
    #undef STEP_TILE
    #undef TILE_START
}

// ================================================================================================
// rotate_column
// ================================================================================================
//
// Shared memory: P (source lane l1), K (chain mode: old lane 0), then ring slots for lanes l0+1 ..
// l1-1, each W + 48 bytes (<= W + 16 bytes of words plus the slack of a misaligned word).  The host
// allocates min(NSLOT, L - 2) slots, at least one: a slot index used below is always smaller than
// the number of lanes streamed through the ring (<= L - 2), and the top's staged moves reuse slot
// 0.  Step i (i = 0 .. m-1, m = l1 - l0) stores lane l0 + i from lane l0 + 1 + i (slot i % NSLOT,
// or P for the last step); it first waits for lane l0 + 1 + i's group and issues lane l0 + 1 + i +
// PREFETCH into slot (i + PREFETCH) % NSLOT, whose last reader (step i + PREFETCH - NSLOT = i - 1)
// finished before the barrier.

#define NSLOT (PREFETCH + 1)

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
rotate_column(uint8_t* a, i64 nb, i64 D, i64 L, i64 S, int left, const uint8_t* lane0,
              const uint8_t* rem, unsigned* ring, i64 W, i64 ncols, i64 G, unsigned* err,
              u64 timeout_ns) {
    extern __shared__ __align__(16) uint8_t smem[];
    const i64 stride = W + 48;
    uint8_t* P = smem;
    uint8_t* K = smem + stride;
    uint8_t* slots = smem + 2 * stride;
    const bool chain = lane0 == nullptr;
    const u64 j = claim(ring);
    const i64 cidx = (i64)j / G, g = (i64)j % G;
    const i64 c = left ? ncols - 1 - cidx : cidx;
    const i64 x0 = c * W, x1 = imin(D, x0 + W), len = x1 - x0;
    const i64 l0 = g * (L - 1) / G, l1 = (g + 1) * (L - 1) / G, m = l1 - l0;
    #define LANE(l) (a + (left ? (i64)(l) * D : nb - ((i64)(l) + 1) * D) + x0)

    // group 0: the last source lane (and lane 0), then the first PREFETCH lanes of the stream
    load_words(P, (uptr)LANE(l1), len);
    if (chain) load_words(K, (uptr)LANE(0), len);
    cp_async_commit();
    for (int f = 0; f < PREFETCH; ++f) {
        const i64 l = l0 + 1 + f;
        if (l < l1) load_words(slots + (f % NSLOT) * stride, (uptr)LANE(l), len);
        cp_async_commit();
    }
    cp_async_wait<PREFETCH>();                          // group 0 is done
    __syncthreads();
    if (threadIdx.x == 0) {
        publish(ring, j, err, timeout_ns);
        if (g > 0) wait_ticket(ring, j - 1, err, timeout_ns);   // segment g-1 has read lane l0
    }
    for (i64 i = 0; i < m; ++i) {
        cp_async_wait<PREFETCH - 1>();
        __syncthreads();
        const i64 ln = l0 + 1 + i + PREFETCH;
        if (ln < l1) load_words(slots + ((i + PREFETCH) % NSLOT) * stride, (uptr)LANE(ln), len);
        cp_async_commit();
        const uint8_t* src = LANE(l0 + 1 + i);
        const uint8_t* buf = (l0 + 1 + i == l1) ? P : slots + (i % NSLOT) * stride;
        store_from(LANE(l0 + i), buf, NO_WRAP, (i64)((uptr)src & 15), len);
    }
    cp_async_wait<0>();
    __syncthreads();
    if (g != G - 1) return;

    // The top of this column.  Old lane L-1 here is in P already (loaded before any store).
    uint8_t* top = LANE(L - 1) - x0;                   // lane L-1, offset 0
    uint8_t* remd = a + (left ? L * D : 0);            // remainder, offset 0
    const i64 r1 = imin(x1, S);                        // remainder offsets [x0, r1)
    const i64 rs = left ? 0 : D - S;                   // lane L-1 offsets [rs, rs + S) <- rem
    {   // saved remainder -> lane L-1
        const i64 y0 = imax(x0, rs), y1 = imin(x1, rs + S);
        staged_move(top + y0, rem + (y0 - rs), y1 - y0, slots);
    }
    if (!chain) {
        // lane 0 (saved) -> lane L-1 outside [rs, rs + S), and -> the remainder
        const i64 y0 = left ? imax(x0, S) : x0, y1 = left ? x1 : imin(x1, D - S);
        staged_move(top + y0, lane0 + (left ? y0 - S : y0 + S), y1 - y0, slots);
        staged_move(remd + x0, lane0 + (left ? D - S + x0 : x0), r1 - x0, slots);
    } else {
        // kept lane 0 [x0, x1) -> top offsets [x0 + sS, x1 + sS) (s = +1 left, -1 right)
        const i64 y0 = left ? x0 + S : x0 - S, y1 = y0 + len;
        const uint8_t* k0 = K + ((uptr)LANE(0) & 15);  // byte x0 of old lane 0
        const i64 q0 = imax(y0, 0), q1 = imin(y1, D);  // the part in lane L-1
        if (threadIdx.x == 0 && q0 < q1) {
            for (i64 u = q0 / W; u <= (q1 - 1) / W; ++u) {
                if (u == c) continue;                  // own lane L-1: loaded (P)
                wait_ticket(ring, (u64)(left ? ncols - 1 - u : u) * G + (G - 1), err,
                            timeout_ns);
            }
        }
        __syncthreads();
        store_from(top + q0, k0 + (q0 - y0), NO_WRAP, 0, q1 - q0);
        if (left && y1 > D) {
            const i64 e0 = imax(y0, D);
            store_from(remd + (e0 - D), k0 + (e0 - y0), NO_WRAP, 0, y1 - e0);
        }
        if (!left && y0 < 0) {
            const i64 e1 = imin(y1, 0);
            store_from(remd + (y0 + S), k0, NO_WRAP, 0, e1 - y0);
        }
    }
    #undef LANE
}

// ================================================================================================
// rotate_prepare
// ================================================================================================
//
// What a pass needs done before it starts, in one launch instead of a memset and up to two
// copies (each of those cost a few microseconds of host time, the kernels' host time shows in
// every call's time): zero `words` control words (the ring and the ticket counter, and before the
// first pass the error flag after them), and copy the bytes the pass overwrites before reading
// them: [src0, src0 + n0) to dst0 and [src1, src1 + n1) to dst1 (the short pass's wrapped bytes
// and end word, or the column pass's lane 0 and remainder; at most SCRATCH_BYTES in all; byte
// ranges of any alignment, copied in 16-byte words where source and destination share theirs).
// The pass runs after this kernel on the same stream, so it sees all of it.

__device__ __forceinline__ void copy_range(uptr dst, uptr src, i64 n, i64 tid, i64 nthreads) {
    if (n <= 0) return;
    i64 head = 0, words = 0;
    if (((dst ^ src) & 15) == 0) {
        head = imin(n, (i64)((16 - (dst & 15)) & 15));
        words = (n - head) >> 4;
    }
    const i64 body = head + 16 * words;
    for (i64 i = tid; i < words; i += nthreads)
        reinterpret_cast<uint4*>(dst + head)[i] = reinterpret_cast<const uint4*>(src + head)[i];
    for (i64 i = tid; i < head; i += nthreads)   // the ragged ends (or every byte), bytewise
        ((uint8_t*)dst)[i] = ((const uint8_t*)src)[i];
    for (i64 i = body + tid; i < n; i += nthreads)
        ((uint8_t*)dst)[i] = ((const uint8_t*)src)[i];
}

extern "C" __global__ void __launch_bounds__(THREADS)
rotate_prepare(unsigned* ctrl, unsigned words, uptr dst0, uptr src0, i64 n0, uptr dst1,
               uptr src1, i64 n1) {
    const i64 tid = (i64)blockIdx.x * THREADS + threadIdx.x;
    const i64 nthreads = (i64)gridDim.x * THREADS;
    for (i64 i = tid; i < words; i += nthreads) ctrl[i] = 0u;
    copy_range(dst0, src0, n0, tid, nthreads);
    copy_range(dst1, src1, n1, tid, nthreads);
}
