// DELTA_BINARY_PACKED (parquet_delta.h), as the Parquet format specifies it: a header (block
// size, miniblocks per block, value count, first value), then blocks of a minimum delta, one
// bit width per miniblock and the miniblocks' bit-packed deltas (least significant bit first).
// The last block stores only the miniblocks that hold values; their widths are all present.
#include "parquet_delta.h"

#include <cstring>
#include <string>

#include "errors.h"

namespace fsstgpu_native {

namespace {

[[noreturn]] void bad(const std::string& what) {
    throw CorruptData("DELTA_BINARY_PACKED lengths: " + what);
}

struct Reader {
    const uint8_t* buf;
    int64_t size, pos;

    uint64_t uleb(const char* what) {
        uint64_t v = 0;
        for (int shift = 0;; shift += 7) {
            if (pos >= size) bad(std::string(what) + " runs past the page");
            const uint8_t b = buf[pos++];
            if (shift == 63 && (b & 0x7E)) bad(std::string(what) + " is over 64 bits");
            v |= uint64_t(b & 0x7F) << shift;
            if (!(b & 0x80)) return v;
            if (shift == 63) bad(std::string(what) + " is over 64 bits");
        }
    }
    uint64_t zigzag(const char* what) {
        const uint64_t z = uleb(what);
        return (z >> 1) ^ (0 - (z & 1));
    }
};

// Bits bit .. bit + w - 1 (w 1-64) of the avail bytes at base; the caller guarantees
// bit + w <= 8 * avail.
inline uint64_t bits_at(const uint8_t* base, int64_t avail, int64_t bit, int w) {
    const int64_t byte = bit >> 3;
    const int shift = int(bit & 7);
    uint64_t lo = 0;
    const int64_t have = avail - byte;
    std::memcpy(&lo, base + byte, size_t(have < 8 ? have : 8));  // little-endian hosts
    uint64_t v = lo >> shift;
    if (shift + w > 64) v |= uint64_t(base[byte + 8]) << (64 - shift);
    return w == 64 ? v : v & ((uint64_t(1) << w) - 1);
}

}  // namespace

int64_t delta_binary_packed(const uint8_t* buf, int64_t size, int64_t pos, int64_t max_values,
                            std::vector<int64_t>& out) {
    if (pos < 0 || pos > size) bad("starts outside the page");
    Reader r{buf, size, pos};
    const uint64_t block = r.uleb("the block size");
    const uint64_t per_block = r.uleb("the miniblock count");
    const uint64_t total = r.uleb("the value count");
    uint64_t value = r.zigzag("the first value");
    // (the format asks for multiples of 128 and 32; the bound keeps a forged size from
    // costing more than the page could hold)
    if (block == 0 || block % 128 != 0 || block > (uint64_t(1) << 24)) {
        bad("block size " + std::to_string(block) + " is not a multiple of 128 up to 2**24");
    }
    if (per_block == 0 || block % per_block != 0 || (block / per_block) % 32 != 0) {
        bad(std::to_string(per_block) + " miniblocks do not divide a block of " +
            std::to_string(block) + " into multiples of 32 values");
    }
    if (total > uint64_t(max_values)) {
        bad(std::to_string(total) + " values where the page holds at most " +
            std::to_string(max_values));
    }
    const int64_t n = int64_t(total);
    const int64_t per_mini = int64_t(block / per_block);
    out.resize(size_t(n));
    if (n == 0) return r.pos;
    out[0] = int64_t(value);
    int64_t k = 1;
    while (k < n) {
        const uint64_t min_delta = r.zigzag("a block's minimum delta");
        if (size - r.pos < int64_t(per_block)) bad("a block's bit widths run past the page");
        const uint8_t* widths = buf + r.pos;
        r.pos += int64_t(per_block);
        for (uint64_t m = 0; m < per_block && k < n; ++m) {
            const int w = widths[m];
            if (w > 64) bad("a miniblock's bit width is " + std::to_string(w));
            const int64_t bytes = per_mini * w / 8;
            if (size - r.pos < bytes) bad("a miniblock runs past the page");
            const uint8_t* mini = buf + r.pos;
            const int64_t count = n - k < per_mini ? n - k : per_mini;
            // unsigned arithmetic: the sums wrap as the format's int64 arithmetic does
            if (w == 0) {
                for (int64_t j = 0; j < count; ++j) out[size_t(k++)] = int64_t(value += min_delta);
            } else {
                for (int64_t j = 0; j < count; ++j) {
                    value += min_delta + bits_at(mini, bytes, j * w, w);
                    out[size_t(k++)] = int64_t(value);
                }
            }
            r.pos += bytes;
        }
    }
    return r.pos;
}

int64_t rle_hybrid(const uint8_t* buf, int64_t size, int64_t pos, int bit_width, int64_t count,
                   uint32_t* out) {
    if (bit_width < 0 || bit_width > 32) {
        throw CorruptData("RLE runs: bit width " + std::to_string(bit_width));
    }
    if (pos < 0 || pos > size) throw CorruptData("RLE runs start outside the page");
    Reader r{buf, size, pos};
    const int value_bytes = (bit_width + 7) / 8;
    const uint32_t mask = bit_width == 32 ? 0xFFFFFFFFu : (uint32_t(1) << bit_width) - 1;
    int64_t k = 0;
    while (k < count) {
        const uint64_t head = r.uleb("an RLE run's header");
        if (head & 1) {  // bit-packed: (head >> 1) groups of 8 values
            const uint64_t groups = head >> 1;
            // (each group takes bit_width bytes; the bound keeps the products below 2**46)
            if (groups == 0 || groups > (uint64_t(1) << 40)) {
                throw CorruptData("RLE runs: a bit-packed run of " + std::to_string(groups) +
                                  " groups");
            }
            const int64_t bytes = int64_t(groups) * bit_width;
            if (size - r.pos < bytes) throw CorruptData("RLE runs: a bit-packed run past the page");
            const uint8_t* run = buf + r.pos;
            const int64_t have = int64_t(groups) * 8;
            const int64_t take = count - k < have ? count - k : have;
            for (int64_t j = 0; j < take; ++j) {
                out[k++] = bit_width ? uint32_t(bits_at(run, bytes, j * bit_width, bit_width)) &
                                           mask
                                     : 0;
            }
            r.pos += bytes;
        } else {  // a run of one value
            const uint64_t n = head >> 1;
            if (size - r.pos < value_bytes) throw CorruptData("RLE runs: a run's value past the page");
            uint32_t v = 0;
            for (int b = 0; b < value_bytes; ++b) v |= uint32_t(buf[r.pos + b]) << (8 * b);
            r.pos += value_bytes;
            if (v & ~mask) throw CorruptData("RLE runs: a value wider than the bit width");
            if (n == 0) throw CorruptData("RLE runs: an empty run");
            const int64_t take = uint64_t(count - k) < n ? count - k : int64_t(n);
            for (int64_t j = 0; j < take; ++j) out[k++] = v;
        }
    }
    return r.pos;
}

int64_t plain_byte_arrays(const uint8_t* buf, int64_t size, int64_t pos, int64_t count,
                          int64_t* starts, int64_t* lengths) {
    if (pos < 0 || pos > size) throw CorruptData("byte arrays start outside the page");
    for (int64_t k = 0; k < count; ++k) {
        if (size - pos < 4) throw CorruptData("a byte array's length runs past the page");
        uint32_t n = 0;
        std::memcpy(&n, buf + pos, 4);
        pos += 4;
        if (uint64_t(size - pos) < n) throw CorruptData("a byte array runs past the page");
        starts[k] = pos;
        lengths[k] = n;
        pos += n;
    }
    return pos;
}

}  // namespace fsstgpu_native
