// DELTA_BYTE_ARRAY values rebuilt on the GPU a value at a time (prefix_rebuild.py launches
// these; its CPU twin rebuilds them a byte at a time by pointer jumping, a different method
// whose bytes these must equal).
//
// Value k shares its first pre[k] bytes with value k - 1 and adds tail[k] bytes of its own
// (its suffix, at tail_start[k] of the page bytes). Byte j < pre[k] of value k is then the
// suffix byte j - pre[i] of the last value i <= k with pre[i] <= j, and those values form a
// chain: link[k] is the last value before k with a shorter prefix (pre strictly falls along
// the chain, to 0: a page's first value has no prefix), and value k's prefix is the suffix
// segments [pre[link], pre[k]) of link[k], [pre[link'], pre[link]) of link[link[k]], ...
// So a warp a value copies its suffix, then walks its chain copying a segment a step: work
// in proportion to the value's bytes (each segment holds at least one), no round of pointer
// jumping over every byte, no wait between rounds (session 84: ~17 rounds, ~20 ms for
// dbtext's line column).
//
// link[k] is found in log steps by a table of minima (mins[l * n + i]: the least pre of the
// 2^l values ending at i, or of those from 0 where fewer), built by the launcher. The arrays
// are the checked ones of page_prefixes.py (no value's prefix longer than the value before
// it, a page's first value without one, the suffixes inside their pages), yet every index is
// checked again here before it is read: a broken chain or a segment outside its bytes sets
// `error` and the value is left, never an out-of-bounds access; each chain step lowers the
// prefix, so no walk outlasts its value's bytes.

typedef unsigned char uint8_t;
typedef long long i64;

#define E_LINK 1      // no value with a shorter prefix before a value that has one
#define E_SEGMENT 2   // a segment's bytes outside the page bytes, the suffix or the output

// link[k]: the last i < k with pre[i] < pre[k] (-1 where pre[k] is 0), a thread a value.
extern "C" __global__ void prefix_links(const i64* __restrict__ mins, int levels, i64 n,
                                        i64* __restrict__ link, int* __restrict__ error)
{
    const i64 stride = (i64)gridDim.x * blockDim.x;
    for (i64 k = (i64)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += stride) {
        const i64 p = mins[k];  // (level 0: the prefixes themselves)
        if (p <= 0) {
            link[k] = -1;
            continue;
        }
        i64 i = k - 1;  // skip back over whole blocks whose least prefix is not shorter
        for (int l = levels - 1; l >= 0; --l) {
            const i64 span = (i64)1 << l;
            if (i - span + 1 >= 0 && mins[(i64)l * n + i] >= p) i -= span;
        }
        if (i < 0 || mins[i] >= p) {
            atomicOr(error, E_LINK);
            i = -1;
        }
        link[k] = i;
    }
}

__device__ __forceinline__ bool inside(i64 at, i64 len, i64 size)
{
    return at >= 0 && len >= 0 && at <= size && len <= size - at;
}

// out[at[k] : at[k] + pre[k] + tail[k]]: value k's bytes, a warp a value.
extern "C" __global__ void prefixed_rebuild(const uint8_t* __restrict__ data, i64 size,
                                            const i64* __restrict__ pre,
                                            const i64* __restrict__ tail,
                                            const i64* __restrict__ at,
                                            const i64* __restrict__ tail_start,
                                            const i64* __restrict__ link, i64 n, i64 total,
                                            uint8_t* __restrict__ out, int* __restrict__ error)
{
    const int lane = threadIdx.x & 31;
    const i64 warps = ((i64)gridDim.x * blockDim.x) >> 5;
    for (i64 k = ((i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5; k < n; k += warps) {
        const i64 base = at[k];
        i64 hi = pre[k];
        const i64 own = tail[k];
        if (own > 0 && (!inside(tail_start[k], own, size) || !inside(base, hi + own, total))) {
            if (lane == 0) atomicOr(error, E_SEGMENT);
            continue;
        }
        for (i64 t = lane; t < own; t += 32) out[base + hi + t] = data[tail_start[k] + t];
        if (hi > 0 && !inside(base, hi, total)) {
            if (lane == 0) atomicOr(error, E_SEGMENT);
            continue;
        }
        i64 c = k;
        while (hi > 0) {  // (every lane walks the chain alike: the loads broadcast)
            const i64 next = link[c];
            if (next < 0 || next >= c) {
                if (lane == 0) atomicOr(error, E_LINK);
                break;
            }
            c = next;
            const i64 lo = pre[c];
            if (lo < 0 || lo >= hi || hi - lo > tail[c] || !inside(tail_start[c], hi - lo, size)) {
                if (lane == 0) atomicOr(error, E_SEGMENT);
                break;
            }
            for (i64 t = lane; t < hi - lo; t += 32) out[base + lo + t] = data[tail_start[c] + t];
            hi = lo;
        }
    }
}
