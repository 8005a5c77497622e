// DELTA_BINARY_PACKED (parquet_delta.h), as the Parquet format specifies it: a header (block
// size, miniblocks per block, value count, first value as a zigzag ULEB128), then blocks of a
// minimum delta (zigzag), one bit width byte per miniblock and the miniblocks' deltas minus the
// minimum, bit-packed least significant bit first. Each miniblock present holds block /
// miniblocks values' worth of bits, padding included; the last block stores only the
// miniblocks that hold values, though the bit widths of all of them are present.
#include "parquet_delta.h"

#include <cstring>
#include <string>

#include "errors.h"

namespace fsstgpu_native {

namespace {

// A block size beyond uint32 is one no writer makes and Arrow's reader refuses (it reads the
// header into uint32); the bound also keeps a miniblock's byte count far from overflowing.
constexpr uint64_t kMaxBlock = uint64_t(1) << 32;

struct Reader {
    const uint8_t* buf;
    int64_t start, pos, end;

    [[noreturn]] void bad(const std::string& what) const {
        throw CorruptData("DELTA_BINARY_PACKED run at byte " + std::to_string(start) + ": " +
                          what);
    }

    // ULEB128 of at most 64 bits: ten bytes, the tenth carrying bit 63 alone.
    uint64_t uleb(const char* what) {
        uint64_t v = 0;
        for (int shift = 0;; shift += 7) {
            if (pos >= end) bad(std::string(what) + " runs past the end at byte " +
                                std::to_string(end));
            const uint8_t b = buf[pos++];
            if (shift == 63 && b > 1) bad(std::string(what) + " is a varint of over 64 bits");
            v |= uint64_t(b & 0x7F) << shift;
            if (!(b & 0x80)) return v;
        }
    }

    // Zigzag undone in uint64: the value's two's complement bits.
    uint64_t zigzag(const char* what) {
        const uint64_t z = uleb(what);
        return (z >> 1) ^ (0 - (z & 1));
    }
};

struct Header {
    uint64_t block, miniblocks, per_mini;
    int64_t count;
    uint64_t first;
};

Header read_header(Reader& r, int64_t max_values) {
    Header h;
    h.block = r.uleb("the block size");
    h.miniblocks = r.uleb("the miniblock count");
    const uint64_t total = r.uleb("the value count");
    h.first = r.zigzag("the first value");
    if (h.block == 0 || h.block % 128 != 0 || h.block >= kMaxBlock) {
        r.bad("block size " + std::to_string(h.block) + " is not a multiple of 128 below 2**32");
    }
    if (h.miniblocks == 0 || h.block % h.miniblocks != 0 || (h.block / h.miniblocks) % 32 != 0) {
        r.bad(std::to_string(h.miniblocks) + " miniblocks do not divide a block of " +
              std::to_string(h.block) + " values into multiples of 32");
    }
    if (total > uint64_t(max_values)) {
        r.bad(std::to_string(total) + " values where at most " + std::to_string(max_values) +
              " may be");
    }
    h.per_mini = h.block / h.miniblocks;
    h.count = int64_t(total);
    return h;
}

// Bits bit .. bit + w - 1 (w 1-64) of the avail bytes at base; the caller guarantees
// bit + w <= 8 * avail, so the ninth byte is read only when those bits reach into it.
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

// One block's values out[k..] (up to n, as many as it holds); returns the new k. The sums are
// unsigned: they wrap modulo 2**64 as the format's int64 arithmetic does, with no overflow UB.
int64_t decode_block(Reader& r, const Header& h, uint64_t& value, int64_t* out, int64_t k,
                     int64_t n) {
    const uint64_t min_delta = r.zigzag("a block's minimum delta");
    if (uint64_t(r.end - r.pos) < h.miniblocks) r.bad("a block's bit widths run past the end");
    const uint8_t* widths = r.buf + r.pos;
    r.pos += int64_t(h.miniblocks);
    for (uint64_t m = 0; m < h.miniblocks && k < n; ++m) {
        const int w = widths[m];
        if (w > 64) r.bad("miniblock " + std::to_string(m) + " has a bit width of " +
                          std::to_string(w));
        const int64_t bytes = int64_t(h.per_mini) * w / 8;  // per_mini is a multiple of 32
        if (r.end - r.pos < bytes) {
            r.bad("a miniblock of " + std::to_string(bytes) + " bytes at byte " +
                  std::to_string(r.pos) + " runs past the end at byte " + std::to_string(r.end));
        }
        const uint8_t* mini = r.buf + r.pos;
        const int64_t take = n - k < int64_t(h.per_mini) ? n - k : int64_t(h.per_mini);
        for (int64_t j = 0; j < take; ++j) {
            value += min_delta + (w ? bits_at(mini, bytes, j * w, w) : 0);
            out[k++] = int64_t(value);
        }
        r.pos += bytes;  // the whole miniblock, its padding too
    }
    return k;
}

}  // namespace

int64_t delta_binary_packed(const uint8_t* buf, int64_t size, int64_t pos, int64_t end,
                            int64_t max_values, std::vector<int64_t>& out) {
    if (pos < 0 || pos > end || end > size) {
        throw CorruptData("DELTA_BINARY_PACKED run at bytes " + std::to_string(pos) + " to " +
                          std::to_string(end) + " lies outside the " + std::to_string(size) +
                          " bytes given");
    }
    Reader r{buf, pos, pos, end};
    const Header h = read_header(r, max_values);
    out.resize(size_t(h.count));
    if (h.count == 0) return r.pos;  // the header (first value included) and no block
    uint64_t value = h.first;
    out[0] = int64_t(value);
    for (int64_t k = 1; k < h.count;) k = decode_block(r, h, value, out.data(), k, h.count);
    return r.pos;
}

}  // namespace fsstgpu_native
