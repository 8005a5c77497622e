// Byte segments gathered end to end on the GPU (gather.py launches it; the CPU twin is
// fsstgpu.native.gather through gather.py's gather_segments_cpu, whose bytes these must equal).
//
// A file -> GPU read uploads a column chunk's pages as they are and leaves each row's codes
// where the pages hold them: a DELTA_LENGTH_BYTE_ARRAY page's in a few long runs, a
// dictionary-encoded page's in its dictionary page, a run (often of ~100 bytes) a row. This
// kernel lays them end to end: segment i is out[out_offsets[i] : out_offsets[i + 1]], copied
// from src[starts[i]:] (starts[i] >= 0) or extra[-1 - starts[i]:] (the bytes the host had to
// decode). Balanced by output, not by segment (a segment may be 3 bytes or 30 MB): each thread
// writes 16 output bytes, finds its first segment by a binary search of out_offsets and walks
// on through the segments it meets, checking each against its source's size; a segment
// outside it writes zeros and sets *error (the launcher raises), never reading out of bounds.
// out_offsets (n + 1, from 0, non-decreasing, ending at out_size) is the host's own running
// sum; the search stays inside [0, n) whatever it holds.

typedef unsigned char uint8_t;
typedef long long i64;

#define GATHER_BYTES 16  // output bytes a thread

extern "C" __global__ void gather_segments(const uint8_t* __restrict__ src, i64 src_size,
                                           const uint8_t* __restrict__ extra, i64 extra_size,
                                           const i64* __restrict__ starts,
                                           const i64* __restrict__ out_offsets, i64 n,
                                           uint8_t* __restrict__ out, i64 out_size,
                                           int* __restrict__ error)
{
    const i64 stride = (i64)gridDim.x * blockDim.x;
    for (i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x; t * GATHER_BYTES < out_size;
         t += stride) {
        const i64 first = t * GATHER_BYTES;
        const i64 last = min(first + (i64)GATHER_BYTES, out_size);
        i64 lo = 0, hi = n;  // the last segment starting at or before `first`
        while (hi - lo > 1) {
            const i64 mid = lo + (hi - lo) / 2;
            if (out_offsets[mid] <= first) lo = mid; else hi = mid;
        }
        i64 s = lo, seg_lo = out_offsets[s], seg_hi = out_offsets[s + 1];
        const uint8_t* from = nullptr;  // the segment's first byte, or null when it is bad
        bool fresh = true;
        union { uint4 v; uint8_t b[GATHER_BYTES]; } buf;
        for (i64 o = first; o < last; ++o) {
            while (o >= seg_hi && s + 1 < n) {  // (empty segments passed over)
                ++s;
                seg_lo = seg_hi;
                seg_hi = out_offsets[s + 1];
                fresh = true;
            }
            if (fresh) {
                fresh = false;
                const i64 at = starts[s], len = seg_hi - seg_lo;
                const bool in_src = at >= 0 && len >= 0 && at <= src_size - len;
                const bool in_extra = at < 0 && len >= 0 && -1 - at <= extra_size - len;
                from = in_src ? src + at : in_extra ? extra + (-1 - at) : nullptr;
                if (!from) atomicOr(error, 1);
            }
            const i64 pos = o - seg_lo;
            const bool ok = from && pos >= 0 && o < seg_hi;
            if (!ok && from) atomicOr(error, 1);
            buf.b[o - first] = ok ? from[pos] : 0;
        }
        if (last - first == GATHER_BYTES) {
            *reinterpret_cast<uint4*>(out + first) = buf.v;  // (out 16-byte aligned)
        } else {
            for (i64 o = first; o < last; ++o) out[o] = buf.b[o - first];
        }
    }
}
