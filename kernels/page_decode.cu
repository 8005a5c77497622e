// Parquet's value encodings decoded on the GPU (page_decode.py launches them; the CPU twins are
// fsstgpu.native's rle_hybrid and delta_binary_packed, fsstgpu/csrc/parquet_pages.cpp, whose
// values these must equal and whose refusals these must flag).
//
// A file -> GPU read (issue #24 item 2) uploads a column chunk's pages as they are; the host
// parses only the page headers, and each page's definition levels, dictionary indices and
// DELTA_BINARY_PACKED lengths are decoded here, a run ("job": where it starts in the uploaded
// bytes, how many bytes it may read, how many values it holds, where they go) a block (RLE /
// bit-packed) or a warp (DELTA_BINARY_PACKED). The run's headers are read by every thread
// alike (they are a few bytes; the loads broadcast), its values unpacked by the threads side by
// side, a DELTA_BINARY_PACKED miniblock's deltas summed by a warp scan. (An RLE job is a whole
// page of levels or indices, 200,000 values for a row group of that many rows: a warp a page
// expanded it 32 values a step, ~2 ms a launch on an H100, session 84.) The bytes are untrusted: every read is checked against the job's size, every
// count against the job's, so a forged run sets the job's error code (the launcher raises
// CorruptDataError naming the page) and never reads or writes out of bounds; each loop
// consumes at least a byte or ends, so none hangs.

typedef unsigned char uint8_t;
typedef unsigned int uint32_t;
typedef long long i64;
typedef unsigned long long u64;

#define FULL 0xffffffffu

// the job's error codes (page_decode.py's ERRORS names them)
#define E_VARINT 1       // the data ends inside a varint, or a varint is over 10 bytes
#define E_PACKED 2       // a bit-packed run of no groups, or of more than the data holds
#define E_EMPTY_RUN 3    // a repeated run of no values
#define E_RUN_VALUE 4    // the data ends inside a repeated run's value
#define E_BLOCKS 5       // a DELTA_BINARY_PACKED header's block / miniblock sizes
#define E_COUNT 6        // a DELTA_BINARY_PACKED header's value count is not the job's
#define E_WIDTHS 7       // the data ends inside a block's bit widths
#define E_WIDTH 8        // a miniblock's bit width over 64
#define E_MINIBLOCK 9    // the data ends inside a miniblock
#define E_BIT_WIDTH 10   // an RLE / bit-packed bit width over 32 (the host's, from the page)
#define E_PLACE 11       // a job's values would run outside the output (its count or place)

// A ULEB128 varint at p[*pos] (*pos moved past it); false where the data ends inside it or it
// runs past 10 bytes. Every lane reads the same bytes.
__device__ __forceinline__ bool uvarint(const uint8_t* p, i64 size, i64* pos, u64* out)
{
    u64 v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (*pos >= size) return false;
        const uint8_t b = p[(*pos)++];
        v |= (u64)(b & 0x7F) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

__device__ __forceinline__ i64 zigzag(u64 v) { return (i64)((v >> 1) ^ (~(v & 1) + 1)); }

// The value of `width` bits (0-64) at bit `bit` of p, LSB first, reading no byte at or past
// p[nbytes].
__device__ __forceinline__ u64 bits_at(const uint8_t* p, i64 nbytes, i64 bit, int width)
{
    if (width == 0) return 0;
    const i64 at = bit >> 3;
    const int shift = (int)(bit & 7);
    const int need = (shift + width + 7) >> 3;  // (at most 9 bytes)
    u64 lo = 0, hi = 0;
    for (int i = 0; i < need; ++i) {
        if (at + i >= nbytes) break;
        const u64 b = p[at + i];
        if (i < 8) lo |= b << (8 * i); else hi = b;
    }
    u64 v = lo >> shift;
    if (shift && need > 8) v |= hi << (64 - shift);
    return width == 64 ? v : v & ((1ull << width) - 1);
}

// Each job: the RLE / bit-packed hybrid's `count[j]` values of `width[j]` bits from
// src[start[j] : start[j] + size[j]] into out[at[j]:] (uint32, out_size values in all); end[j]
// the bytes read, or error[j] set. A bit-packed run's last group may hold values past the count: read, not
// written.
extern "C" __global__ void rle_hybrid_jobs(const uint8_t* __restrict__ src,
                                           const i64* __restrict__ start,
                                           const i64* __restrict__ size,
                                           const i64* __restrict__ count,
                                           const int* __restrict__ width,
                                           const i64* __restrict__ at, i64 njobs,
                                           i64 out_size, uint32_t* __restrict__ out,
                                           i64* __restrict__ end, int* __restrict__ error)
{
    // a block a job: no thread writes what another reads, so no barrier (the headers are
    // read-only, every thread walks them alike)
    const int lane = threadIdx.x, step = blockDim.x;
    for (i64 j = blockIdx.x; j < njobs; j += gridDim.x) {
        const uint8_t* p = src + start[j];
        const i64 n = size[j], want = count[j];
        const int bw = width[j];
        uint32_t* dst = out + at[j];
        int err = 0;
        i64 pos = 0, done = 0;
        if (bw < 0 || bw > 32) err = E_BIT_WIDTH;
        if (want < 0 || at[j] < 0 || want > out_size - at[j]) err = E_PLACE;
        const int value_bytes = (bw + 7) / 8;
        while (!err && done < want) {
            u64 header;
            if (!uvarint(p, n, &pos, &header)) { err = E_VARINT; break; }
            if (header & 1) {  // bit-packed: header >> 1 groups of 8 values
                const u64 groups = header >> 1;
                const i64 left = n - pos;
                if (groups == 0 || (bw && groups > (u64)(left / bw))) { err = E_PACKED; break; }
                // only the groups holding values still wanted (a forged run of 0-bit values
                // may declare 2**62 groups)
                const u64 wanted = (u64)(want - done + 7) / 8;
                const i64 vals = (i64)(groups < wanted ? groups : wanted) * 8;
                const i64 take = vals < want - done ? vals : want - done;
                const i64 bytes = vals * bw / 8;
                for (i64 k = lane; k < take; k += step) {
                    dst[done + k] = (uint32_t)bits_at(p + pos, bytes, k * bw, bw);
                }
                pos += (i64)groups * bw;
                done += take;
            } else {  // a repeated value: header >> 1 times, in value_bytes bytes
                const u64 repeats = header >> 1;
                if (repeats == 0) { err = E_EMPTY_RUN; break; }
                if (n - pos < value_bytes) { err = E_RUN_VALUE; break; }
                uint32_t v = 0;
                for (int b = 0; b < value_bytes; ++b) v |= (uint32_t)p[pos + b] << (8 * b);
                pos += value_bytes;
                const i64 take = repeats < (u64)(want - done) ? (i64)repeats : want - done;
                for (i64 k = lane; k < take; k += step) dst[done + k] = v;
                done += take;
            }
        }
        if (lane == 0) {
            error[j] = err;
            end[j] = err ? -1 : pos;
        }
    }
}

// Each job: a DELTA_BINARY_PACKED run of `count[j]` values (its header must say so) from
// src[start[j] : start[j] + size[j]] into out[at[j]:] (int64, arithmetic modulo 2**64); end[j]
// the bytes read (the last block's miniblocks past the count are not read, as Parquet writes
// none), or error[j] set.
extern "C" __global__ void delta_binary_packed_jobs(const uint8_t* __restrict__ src,
                                                    const i64* __restrict__ start,
                                                    const i64* __restrict__ size,
                                                    const i64* __restrict__ count,
                                                    const i64* __restrict__ at, i64 njobs,
                                                    i64 out_size, i64* __restrict__ out,
                                                    i64* __restrict__ end,
                                                    int* __restrict__ error)
{
    const int lane = threadIdx.x & 31;
    const i64 warps = (i64)gridDim.x * (blockDim.x >> 5);
    for (i64 j = ((i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5; j < njobs; j += warps) {
        const uint8_t* p = src + start[j];
        const i64 n = size[j], want = count[j];
        i64* dst = out + at[j];
        int err = 0;
        i64 pos = 0;
        u64 block = 0, miniblocks = 0, total = 0, first = 0;
        if (want < 0 || at[j] < 0 || want > out_size - at[j]) {
            err = E_PLACE;
        } else if (!uvarint(p, n, &pos, &block) || !uvarint(p, n, &pos, &miniblocks)
            || !uvarint(p, n, &pos, &total) || !uvarint(p, n, &pos, &first)) {
            err = E_VARINT;
        } else if (block == 0 || block % 128 || block > (1u << 20) || miniblocks == 0
                   || block % miniblocks || (block / miniblocks) % 32) {
            err = E_BLOCKS;
        } else if (total != (u64)want) {
            err = E_COUNT;
        }
        if (!err && want > 0) {
            const i64 per = (i64)(block / miniblocks);
            u64 last = (u64)zigzag(first);
            if (lane == 0) dst[0] = (i64)last;
            i64 done = 1;
            while (!err && done < want) {
                u64 zz;
                if (!uvarint(p, n, &pos, &zz)) { err = E_VARINT; break; }
                const u64 min_delta = (u64)zigzag(zz);
                if (n - pos < (i64)miniblocks) { err = E_WIDTHS; break; }
                const i64 widths = pos;
                pos += (i64)miniblocks;
                for (u64 m = 0; m < miniblocks && done < want; ++m) {
                    const int w = p[widths + m];
                    if (w > 64) { err = E_WIDTH; break; }
                    const i64 bytes = per / 8 * w;
                    if (n - pos < bytes) { err = E_MINIBLOCK; break; }
                    const i64 take = per < want - done ? per : want - done;
                    for (i64 base = 0; base < take; base += 32) {
                        const i64 k = base + lane;
                        u64 v = k < take ? min_delta + bits_at(p + pos, bytes, k * w, w) : 0;
                        for (int off = 1; off < 32; off <<= 1) {  // inclusive warp scan
                            const u64 t = __shfl_up_sync(FULL, v, off);
                            if (lane >= off) v += t;
                        }
                        if (k < take) dst[done + k] = (i64)(last + v);
                        last += __shfl_sync(FULL, v, 31);
                    }
                    pos += bytes;
                    done += take;
                }
            }
        }
        if (lane == 0) {
            error[j] = err;
            end[j] = err ? -1 : pos;
        }
    }
}
