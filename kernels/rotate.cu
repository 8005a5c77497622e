// In-place rotation of a byte range (std::rotate), one pass per kernel: every byte the kernel
// moves is read once from the array and written once to it.  Launched by rotate.py, which also
// turns a rotation into a plan of one or more such passes.
//
// Shared machinery
// ----------------
// * Work items ("tickets") are claimed with atomicAdd on a counter, so tickets are claimed in
//   increasing order and only by blocks that are running; a ticket says what the block does,
//   never its blockIdx (the hardware may start blocks in any order).  The ticket -> tile map is
//   closed form.
// * A block loads a ticket's source bytes into shared memory, then publishes "ticket j has read"
//   in a ring of RING flag slots: slot j % RING holds the largest published ticket + 1 of that
//   residue.  Before publishing, ticket j waits until ticket j - RING has published (so the
//   slot's values only grow, and "slot >= j' + 1" proves that ticket j' has read).  Then the block
//   waits until every ticket whose source overlaps its destination has published, and writes.
//   Memory ordering: the flag is stored with st.release after a __threadfence, by one thread after
//   a __syncthreads that follows the block's loads (their values are in shared memory, so later
//   writes by other blocks cannot change them); waiters use ld.acquire.
//
// rotate_column (one block per ticket): rotate [0, nb) left (or right) by D bytes where
//   nb = L*D + S.  The range is L lanes of D bytes and a remainder of S bytes (left: lanes from 0,
//   remainder at the end; right: lanes from the end, remainder at 0), the remainder saved to
//   scratch beforehand.  Lane l's bytes go to lane l-1 at the same offset, the remainder's go to
//   lane L-1, and lane 0's bytes go to "the top" (lane L-1 or the remainder) shifted by S (left:
//   +S, right: -S).  Ticket j owns column c = [cW, cW + W) of every lane (left: c = C - 1 - j,
//   right: c = j): it loads all its lanes (and its part of the saved remainder), publishes, waits
//   for the columns whose lane L-1 receives its lane 0 (left: columns >= c, right: columns <= c,
//   i.e. earlier tickets or itself), and writes everything.  All other moves stay inside the
//   column.  The remainder region is only ever read from the saved copy, so writing it needs no
//   wait.
//   Why it cannot deadlock (any n, shift and grid size): every wait is for a ticket SMALLER than
//   the waiter's own (ring reuse: j - RING; readers: earlier columns).  By induction on the ticket
//   number: ticket 0 waits for nobody and finishes; if all tickets < j finish, ticket j's waits
//   are all satisfied and it finishes too.  A waiting block never holds anything a smaller ticket
//   needs, and the smaller tickets are already resident, so no grid size, occupancy or scheduling
//   order can stall it.
//
// rotate_short (persistent, pipelined; details below): rotate [0, nb) left (or right) by d bytes,
//   d small.  Destination tiles are 16-byte aligned ranges of `tile` bytes.  Left: ticket j is
//   tile j, whose source [p0 + d, p1 + d) lies after it (bytes past nb come from a copy of the old
//   bytes made beforehand); the old contents of [p0, p1) are read by the tiles covering
//   [p0 - d, p1 - d), all of them at or before tile j: earlier tickets, or itself (already read).
//   Bytes below 0 belong to the saved head, which nobody reads from the array.  Right: mirror
//   image, ticket j is tile m - 1 - j.

// No headers (NVRTC): the fixed-width types are spelled out; identical to <cstdint> on Linux.
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;

typedef long long i64;
typedef unsigned long long u64;
typedef unsigned long long uptr;   // pointer as an integer

#define THREADS 256
#define RING 4096

__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ void st_release(unsigned* p, unsigned v) {
    asm volatile("st.release.gpu.global.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}

// Thread 0 only.  Blocks until ticket t has published its read.
__device__ __forceinline__ void wait_ticket(const unsigned* ring, u64 t) {
    const unsigned* slot = ring + (t % RING);
    while (ld_acquire(slot) < (unsigned)(t + 1)) __nanosleep(64);
}

// Thread 0 only.  Publishes "ticket j has read" (after the ring slot's previous owner did).
__device__ __forceinline__ void publish(unsigned* ring, u64 j) {
    if (j >= RING) wait_ticket(ring, j - RING);
    __threadfence();
    st_release(ring + (j % RING), (unsigned)(j + 1));
}

__device__ __forceinline__ u64 claim(unsigned* ring) {
    __shared__ u64 ticket;
    if (threadIdx.x == 0) ticket = atomicAdd(ring + RING, 1u);
    __syncthreads();
    return ticket;
}

// Copy len bytes global -> shared.  16-byte words when both sides share their address mod 16.
__device__ void load_range(uint8_t* sm, const uint8_t* g, i64 len) {
    if (len <= 0) return;
    if ((((uptr)sm ^ (uptr)g) & 15) == 0) {
        i64 head = (16 - ((uptr)g & 15)) & 15;
        if (head > len) head = len;
        i64 words = (len - head) >> 4;
        for (i64 i = threadIdx.x; i < head; i += THREADS) sm[i] = g[i];
        const uint4* gw = reinterpret_cast<const uint4*>(g + head);
        uint4* sw = reinterpret_cast<uint4*>(sm + head);
        for (i64 i = threadIdx.x; i < words; i += THREADS) sw[i] = __ldcs(gw + i);
        for (i64 i = head + (words << 4) + threadIdx.x; i < len; i += THREADS) sm[i] = g[i];
    } else {
        for (i64 i = threadIdx.x; i < len; i += THREADS) sm[i] = g[i];
    }
}

// 16 bytes from shared memory at any byte address (reads up to 4 bytes past them: every buffer is
// followed by at least 16 bytes of shared memory).
__device__ __forceinline__ uint4 read16(const uint8_t* p) {
    uptr a = (uptr)p;
    const uint32_t* w = reinterpret_cast<const uint32_t*>(a & ~(uptr)3);
    unsigned sh = (unsigned)(a & 3) * 8;
    uint32_t w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], w4 = w[4];
    uint4 r;
    r.x = __funnelshift_r(w0, w1, sh);
    r.y = __funnelshift_r(w1, w2, sh);
    r.z = __funnelshift_r(w2, w3, sh);
    r.w = __funnelshift_r(w3, w4, sh);
    return r;
}

// Copy len bytes shared -> global, any relative alignment: aligned 16-byte stores inside, single
// bytes at the two ragged ends (the bytes next to them belong to other tiles).
__device__ void store_range(uint8_t* g, const uint8_t* sm, i64 len) {
    if (len <= 0) return;
    i64 head = (16 - ((uptr)g & 15)) & 15;
    if (head > len) head = len;
    i64 words = (len - head) >> 4;
    for (i64 i = threadIdx.x; i < head; i += THREADS) g[i] = sm[i];
    uint4* gw = reinterpret_cast<uint4*>(g + head);
    const uint8_t* s = sm + head;
    for (i64 i = threadIdx.x; i < words; i += THREADS) __stcs(gw + i, read16(s + (i << 4)));
    for (i64 i = head + (words << 4) + threadIdx.x; i < len; i += THREADS) g[i] = sm[i];
}

__device__ __forceinline__ i64 imin(i64 a, i64 b) { return a < b ? a : b; }
__device__ __forceinline__ i64 imax(i64 a, i64 b) { return a > b ? a : b; }

// ------------------------------------------------------------------------------------------------

extern "C" __global__ void __launch_bounds__(THREADS)
rotate_column(uint8_t* a, i64 nb, i64 D, int L, i64 S, int left, const uint8_t* saved,
              unsigned* ring, i64 W, i64 ncols) {
    extern __shared__ __align__(16) uint8_t smem[];
    const u64 j = claim(ring);
    const i64 c = left ? ncols - 1 - (i64)j : (i64)j;
    const i64 X0 = c * W, X1 = imin(D, X0 + W), len = X1 - X0;
    const i64 stride = W + 48;      // one lane buffer: 16 B slack before, 16 + 16 after
    const i64 rem0 = left ? (i64)L * D : 0;         // where the remainder lives
    // lane l starts at lane_start(l)
    #define LANE_START(l) (left ? (i64)(l) * D : nb - ((i64)(l) + 1) * D)

    // Load every lane's column, and the part of the saved remainder that this column receives.
    for (int l = 0; l < L; ++l) {
        const uint8_t* g = a + LANE_START(l) + X0;
        load_range(smem + l * stride + 16 + ((uptr)g & 15), g, len);
    }
    // remainder bytes go to lane L-1: left at offsets [0, S), right at offsets [D - S, D)
    const i64 q0 = left ? X0 : imax(X0, D - S), q1 = left ? imin(X1, S) : X1;
    const uint8_t* rsrc = saved + (left ? q0 : q0 - (D - S));
    uint8_t* rbuf = smem + L * stride + 16 + ((uptr)rsrc & 15);
    if (q0 < q1) load_range(rbuf, rsrc, q1 - q0);
    __syncthreads();

    // Lane 0's bytes go to top offsets y in [X0 + sS, X1 + sS) (s = +1 left, -1 right); the part
    // inside [0, D) lands in lane L-1, whose old bytes are read by the columns holding them.
    const i64 y0 = left ? X0 + S : X0 - S, y1 = y0 + len;
    if (threadIdx.x == 0) {
        publish(ring, j);
        i64 r0 = imax(y0, 0), r1 = imin(y1, D);
        if (r0 < r1) {
            for (i64 u = r0 / W; u <= (r1 - 1) / W; ++u) {
                if (u == c) continue;
                wait_ticket(ring, left ? (u64)(ncols - 1 - u) : (u64)u);
            }
        }
    }
    __syncthreads();

    for (int l = 1; l < L; ++l) {
        const uint8_t* g = a + LANE_START(l) + X0;
        store_range(a + LANE_START(l - 1) + X0, smem + l * stride + 16 + ((uptr)g & 15), len);
    }
    if (q0 < q1) store_range(a + LANE_START(L - 1) + q0, rbuf, q1 - q0);
    {
        const uint8_t* g = a + LANE_START(0) + X0;
        const uint8_t* b0 = smem + 16 + ((uptr)g & 15);
        // part landing in lane L-1: offsets [max(y0, 0), min(y1, D))
        i64 r0 = imax(y0, 0), r1 = imin(y1, D);
        if (r0 < r1) store_range(a + LANE_START(L - 1) + r0, b0 + (r0 - y0), r1 - r0);
        // part landing in the remainder: left y >= D -> rem offset y - D; right y < 0 -> y + S
        if (left) {
            i64 e0 = imax(y0, D);
            if (e0 < y1) store_range(a + rem0 + (e0 - D), b0 + (e0 - y0), y1 - e0);
        } else {
            i64 e1 = imin(y1, 0);
            if (y0 < e1) store_range(a + rem0 + (y0 + S), b0, e1 - y0);
        }
    }
    #undef LANE_START
}

// ================================================================================================
// rotate_short: pipelined and persistent
// ================================================================================================
//
// A block is persistent: it loops over tickets (the tiles above, the same publish and waits)
// and keeps PIPE_STAGES - 1 tickets' loads in flight while it publishes, waits for and stores the
// current one.  Loads are cp.async 16-byte copies of the aligned 16-byte words that hold the
// source bytes (a word holding at least one byte of a valid range lies inside that range's
// allocation, so no word can fault; its other bytes are unused).
//
// Per block and iteration i (stage s = i % S, S = PIPE_STAGES):
//   wait for the cp.async group of ticket tk[s]; barrier 1; issue the loads of the ticket held in
//   stage (i + S - 1) % S (claimed one iteration earlier) into that stage's buffer (last read by
//   the stores of iteration i - 1, which all ended before barrier 1); thread 0 publishes tk[s];
//   thread 32 claims the next ticket and waits for tk[s]'s readers; barrier 2; store stage s.
//
// Why it cannot deadlock (any grid size, any residency)
// -----------------------------------------------------
// A block claims its tickets one after another with atomicAdd, so the tickets a block holds are
// increasing and every ticket it holds was claimed while it was running.  The work on a ticket t
// waits only for (a) the block's previous ticket to be stored, (b) ticket t - RING to have
// published (ring reuse), (c) t's readers to have published: all are tickets smaller than t.
// Induction on t: if every ticket < t gets published and stored, the block holding t gets past
// (a), (b), (c) and stores t.  Ticket 0 waits for nothing.  Every ticket < ntickets is claimed:
// a block leaves its loop only after claiming a ticket >= ntickets.  Blocks that are not resident
// hold no ticket, so they block nobody; they start when another block exits, claim a ticket past
// the end and leave.
//
// Bounded waits: every spin also watches *err and a %globaltimer deadline (timeout_ns).  Past the
// deadline the waiter sets *err = 1 and stops waiting; every later wait sees *err and returns at
// once, so the kernel always finishes (with a garbage result) and the host raises.

#define PIPE_STAGES 3
#define PIPE_MIN_BLOCKS 5   // <= 51 registers: 5 resident blocks of 256 threads per SM

__device__ __forceinline__ u64 global_ns() {
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ __forceinline__ unsigned ld_volatile(const unsigned* p) {
    return *(const volatile unsigned*)p;
}

// Thread-level only.  Returns once ticket t has published, *err is set, or the deadline passed
// (then it sets *err).
__device__ __forceinline__ void wait_ticket_bounded(const unsigned* ring, u64 t, unsigned* err,
                                                    u64 timeout_ns) {
    const unsigned* slot = ring + (t % RING);
    if (ld_acquire(slot) >= (unsigned)(t + 1)) return;
    const u64 t0 = global_ns();
    while (ld_acquire(slot) < (unsigned)(t + 1)) {
        if (ld_volatile(err)) return;
        if (global_ns() - t0 > timeout_ns) { atomicOr(err, 1u); return; }
        __nanosleep(32);
    }
}

__device__ __forceinline__ void publish_bounded(unsigned* ring, u64 j, unsigned* err,
                                                u64 timeout_ns) {
    if (j >= RING) wait_ticket_bounded(ring, j - RING, err, timeout_ns);
    __threadfence();
    st_release(ring + (j % RING), (unsigned)(j + 1));
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

// ------------------------------------------------------------------------------------------------

// Start of destination tile t (tile t is [start(t), start(t + 1))): tiles of `tile` bytes on
// 16-byte aligned addresses (al0 = array address mod 16), clipped to [0, nb].
__device__ __forceinline__ i64 short_bound(i64 t, i64 tile, int al0, i64 nb) {
    if (t <= 0) return 0;
    return imin(nb, t * tile - al0);
}

// Short pass, source of ticket j's tile as aligned words.  Virtual source position v (left:
// [p0 + d, p1 + d), right: [p0 - d, p1 - d)) lives at address base + v when the whole word holding
// it lies in [0, nb) (left: no byte >= nb; right: no byte < 0), else at sbase + v, a copy of the
// old bytes made before the kernel that covers every such word (left: v in [nb - 16, nb + d + 16),
// right: v in [-d - 16, 16)), aligned like the array (sbase = base mod 16).
__device__ __forceinline__ void short_issue(uint8_t* stage, uptr base, i64 nb, i64 d, int left,
                                            uptr sbase, i64 tile, int al0, i64 ntiles, u64 j) {
    const i64 t = left ? (i64)j : ntiles - 1 - (i64)j;
    const i64 p0 = short_bound(t, tile, al0, nb), p1 = short_bound(t + 1, tile, al0, nb);
    const i64 s0 = left ? p0 + d : p0 - d;
    const uptr w0 = (base + (uptr)s0) & ~(uptr)15;                   // address of the first word
    const i64 nw = (i64)(((base + (uptr)(s0 + p1 - p0) + 15) & ~(uptr)15) - w0) >> 4;
    const i64 v0 = (i64)(w0 - base);                                 // virtual start of word 0
    for (i64 i = threadIdx.x; i < nw; i += THREADS) {
        const i64 v = v0 + 16 * i;
        const bool from_copy = left ? (v + 16 > nb) : (v < 0);
        cp_async16(stage + 16 * i, (from_copy ? sbase : base) + (uptr)v);
    }
}

extern "C" __global__ void __launch_bounds__(THREADS, PIPE_MIN_BLOCKS)
rotate_short(uint8_t* a, i64 nb, i64 d, int left, uptr sbase, unsigned* ring,
                  i64 tile, int al0, i64 ntiles, unsigned* err, u64 timeout_ns) {
    extern __shared__ __align__(16) uint8_t smem[];
    __shared__ u64 tk[PIPE_STAGES];
    const i64 sstride = tile + 64;        // stage: <= tile + 30 bytes of words, read16 overrun
    const uptr base = (uptr)a;
    const u64 nt = (u64)ntiles;
    if (threadIdx.x == 0) {
        u64 prev = 0;
        for (int s = 0; s < PIPE_STAGES; ++s) {
            prev = (s == 0 || prev < nt) ? (u64)atomicAdd(ring + RING, 1u) : nt;
            tk[s] = prev;
        }
    }
    __syncthreads();
    for (int s = 0; s < PIPE_STAGES - 1; ++s) {
        if (tk[s] < nt) short_issue(smem + s * sstride, base, nb, d, left, sbase, tile, al0,
                                    ntiles, tk[s]);
        cp_async_commit();
    }
    for (u64 i = 0;; ++i) {
        const int s = (int)(i % PIPE_STAGES);
        const u64 j = tk[s];
        if (j >= nt) break;                      // tickets in tk only grow: nothing left
        cp_async_wait<PIPE_STAGES - 2>();        // this thread's copies of ticket j are done
        __syncthreads();                         // everybody's are
        const int sn = (int)((i + PIPE_STAGES - 1) % PIPE_STAGES);
        const u64 jn = tk[sn];
        if (jn < nt) short_issue(smem + sn * sstride, base, nb, d, left, sbase, tile, al0,
                                 ntiles, jn);
        cp_async_commit();
        const i64 t = left ? (i64)j : ntiles - 1 - (i64)j;
        const i64 p0 = short_bound(t, tile, al0, nb), p1 = short_bound(t + 1, tile, al0, nb);
        if (threadIdx.x == 0) publish_bounded(ring, j, err, timeout_ns);
        if (threadIdx.x == 32) {
            const u64 nx = jn < nt ? (u64)atomicAdd(ring + RING, 1u) : nt;
            i64 r0 = left ? p0 - d : p0 + d, r1 = left ? p1 - d : p1 + d;
            r0 = imax(r0, 0);
            r1 = imin(r1, nb);
            if (r0 < r1) {
                const i64 ta = (r0 + al0) / tile, tb = (r1 - 1 + al0) / tile;
                for (i64 u = ta; u <= tb; ++u) {
                    if (u == t) continue;
                    wait_ticket_bounded(ring, left ? (u64)u : (u64)(ntiles - 1 - u), err,
                                        timeout_ns);
                }
            }
            tk[s] = nx;                          // read again at iteration i + 1 (as stage sn)
        }
        __syncthreads();
        const i64 s0 = left ? p0 + d : p0 - d;
        store_range(a + p0, smem + s * sstride + ((base + (uptr)s0) & 15), p1 - p0);
    }
}
