// Parquet DELTA_LENGTH_BYTE_ARRAY pages decoded on the GPU (dlba_pages.py holds the launchers and
// the CPU twin these kernels match value for value and byte for byte).
//
// A DELTA_LENGTH_BYTE_ARRAY page holds its values' lengths (DELTA_BINARY_PACKED) and then the
// values' bytes back to back; a data page v1 puts the definition levels first (a 4-byte length,
// then that many bytes).  An fsst column's codes leaf is such a page, so its codes are each page's
// byte region: decoding the lengths finds where that region starts and what each string's codes
// weigh, and one copy per page joins the regions into the decoder's code stream.
//
//   dlba_lengths  one warp per page.  Every lane parses the headers (the same bytes: broadcast
//                 loads); a miniblock's 32 values at a time, lane j unpacks value j, adds the
//                 block's minimum delta, and a warp scan turns the deltas into values.  Writes
//                 the page's lengths at values[value_base[p]..], its code region (start, count)
//                 and an error word.
//   dlba_gather   one block per page: copies its region to codes[code_base[p]..] (skipped for a
//                 page with an error).
//
// Every byte read is bounds-checked against the page's size (the caller's buffers also hold 16
// bytes of slack past each page, which the unaligned 8-byte window of the unpacking may touch).
// Error bits of err[p]: 1 the levels run past the page, 2 a malformed DELTA_BINARY_PACKED header
// (varint over 64 bits, block size not a multiple of 128, values per miniblock not a multiple of
// 32), 4 a value count other than expected[p], 8 a bit width over 64 or a miniblock past the
// page, 16 a length below 0 or above 2**31 - 1, 32 lengths that do not add up to the page's bytes.

typedef unsigned char uint8_t;
typedef long long i64;
typedef unsigned long long u64;

#define FULL 0xffffffffu

struct Reader {
    const uint8_t* p;
    i64 pos, end;
    bool bad;

    __device__ u64 varint() {
        u64 v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (pos >= end) { bad = true; return 0; }
            uint8_t b = p[pos++];
            v |= (u64)(b & 0x7f) << shift;
            if (!(b & 0x80)) return v;
        }
        bad = true;
        return 0;
    }
    __device__ i64 zigzag() {
        u64 z = varint();
        return (i64)((z >> 1) ^ (0 - (z & 1)));
    }
};

// bits [bit, bit + width) of the little-endian bit stream at p (width <= 64; may read 9 bytes)
__device__ __forceinline__ u64 unpack(const uint8_t* p, u64 bit, int width) {
    if (width == 0) return 0;
    const uint8_t* b = p + (bit >> 3);
    int shift = (int)(bit & 7);
    u64 lo = 0;
    for (int k = 0; k < 8; ++k) lo |= (u64)b[k] << (8 * k);
    u64 v = lo >> shift;
    if (shift && width > 64 - shift) v |= (u64)b[8] << (64 - shift);
    return width == 64 ? v : (v & ((1ull << width) - 1));
}

__device__ __forceinline__ u64 warp_scan(u64 v, int lane) {
    for (int d = 1; d < 32; d <<= 1) {
        u64 n = __shfl_up_sync(FULL, v, d);
        if (lane >= d) v += n;  // wrapping, as the format's arithmetic
    }
    return v;
}

extern "C" __global__ void dlba_lengths(
        const u64* __restrict__ page_ptr, const i64* __restrict__ page_size,
        const uint8_t* __restrict__ has_levels, const i64* __restrict__ expected,
        const i64* __restrict__ value_base, i64 npages,
        i64* __restrict__ values, i64* __restrict__ code_start, i64* __restrict__ code_count,
        int* __restrict__ err) {
    const int lane = threadIdx.x & 31;
    const i64 page = ((i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (page >= npages) return;
    Reader r{(const uint8_t*)page_ptr[page], 0, page_size[page], false};
    int bits = 0;
    if (has_levels[page]) {  // data page v1: u32 length, then the levels
        if (r.end < 4) { bits = 1; goto done; }
        i64 n = (i64)r.p[0] | ((i64)r.p[1] << 8) | ((i64)r.p[2] << 16) | ((i64)r.p[3] << 24);
        if (n > r.end - 4) { bits = 1; goto done; }
        r.pos = 4 + n;
    }
    {
        const u64 block = r.varint(), nmini = r.varint(), total = r.varint();
        i64 value = r.zigzag();
        if (r.bad || block == 0 || block % 128 || nmini == 0 || block % nmini ||
                (block / nmini) % 32 || block > (1u << 20)) { bits = 2; goto done; }
        if (total != (u64)expected[page]) { bits = 4; goto done; }
        const i64 per_mini = (i64)(block / nmini);
        i64* out = values + value_base[page];
        u64 sum = 0;
        if (total > 0) {
            if (lane == 0) out[0] = value;
            if (value < 0 || value > 0x7fffffffLL) bits |= 16;
            if (lane == 0) sum = (u64)value;  // counted once: the lanes' sums are added below
        }
        i64 left = total > 0 ? (i64)total - 1 : 0, done_values = 1;
        while (left > 0 && !bits) {
            const i64 min_delta = r.zigzag();
            const i64 widths_at = r.pos;
            if (r.bad || (u64)(r.end - r.pos) < nmini) { bits = 2; break; }
            r.pos += nmini;
            for (u64 m = 0; m < nmini && left > 0 && !bits; ++m) {
                const int width = r.p[widths_at + m];
                if (width > 64) { bits = 8; break; }
                const i64 nbytes = per_mini * width / 8;
                if (nbytes > r.end - r.pos) { bits = 8; break; }
                const uint8_t* data = r.p + r.pos;
                for (i64 j0 = 0; j0 < per_mini && left > 0; j0 += 32) {
                    const i64 j = j0 + lane;
                    const bool live = j - j0 < left;
                    u64 d = live ? (u64)min_delta + unpack(data, (u64)j * width, width) : 0;
                    u64 v = (u64)value + warp_scan(d, lane);
                    const int take = left < 32 ? (int)left : 32;
                    if (live) {
                        out[done_values + lane] = (i64)v;
                        if ((i64)v < 0 || (i64)v > 0x7fffffffLL) bits |= 16;
                        sum += v;  // lane's share; reduced below
                    }
                    value = (i64)__shfl_sync(FULL, v, take - 1);
                    done_values += take;
                    left -= take;
                }
                r.pos += nbytes;
                bits = __reduce_or_sync(FULL, bits);
            }
        }
        for (int d = 16; d; d >>= 1) sum += __shfl_xor_sync(FULL, sum, d);
        bits = __reduce_or_sync(FULL, bits);
        if (!bits && sum != (u64)(r.end - r.pos)) bits = 32;
        if (lane == 0) {
            code_start[page] = r.pos;
            code_count[page] = bits ? 0 : r.end - r.pos;
        }
    }
done:
    if (lane == 0) {
        err[page] = bits;
        if (bits) { code_start[page] = 0; code_count[page] = 0; }
    }
}

extern "C" __global__ void dlba_gather(
        const u64* __restrict__ page_ptr, const i64* __restrict__ code_start,
        const i64* __restrict__ code_count, const i64* __restrict__ code_base,
        const int* __restrict__ err, uint8_t* __restrict__ codes) {
    const i64 page = blockIdx.x;
    if (err[page]) return;
    const uint8_t* src = (const uint8_t*)page_ptr[page] + code_start[page];
    uint8_t* dst = codes + code_base[page];
    const i64 n = code_count[page];
    for (i64 k = threadIdx.x; k < n; k += blockDim.x) dst[k] = src[k];
}

// values_gather: value v's size[v] bytes at src + src_at[v] copied to dst + dst_at[v], one warp a
// value (grid-stride): the codes of dictionary-coded strings gathered into the decoder's code
// stream.  The host checked every range against both buffers.
extern "C" __global__ void values_gather(
        const uint8_t* __restrict__ src, const i64* __restrict__ src_at,
        const i64* __restrict__ dst_at, const i64* __restrict__ size, i64 n,
        uint8_t* __restrict__ dst) {
    const int lane = threadIdx.x & 31;
    const i64 nwarps = ((i64)gridDim.x * blockDim.x) >> 5;
    for (i64 v = ((i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5; v < n; v += nwarps) {
        const uint8_t* s = src + src_at[v];
        uint8_t* d = dst + dst_at[v];
        const i64 len = size[v];
        for (i64 k = lane; k < len; k += 32) d[k] = s[k];
    }
}
