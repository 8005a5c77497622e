// Parquet's RLE / bit-packed hybrid and DELTA_BINARY_PACKED decoders (parquet_pages.h).
#include "parquet_pages.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include "errors.h"

namespace fsstgpu_native {

namespace {

// A ULEB128 varint at data[*pos] (at most 10 bytes), *pos moved past it.
uint64_t uvarint(const uint8_t* data, int64_t size, int64_t* pos, const char* what) {
    uint64_t out = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (*pos >= size) throw CorruptData(std::string(what) + " ends inside a varint");
        const uint8_t b = data[(*pos)++];
        out |= static_cast<uint64_t>(b & 0x7F) << shift;
        if (!(b & 0x80)) return out;
    }
    throw CorruptData(std::string(what) + " has a varint longer than 10 bytes");
}

int64_t zigzag(uint64_t v) { return static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1)); }

// `n` values of `width` bits (0-64) packed least significant bit first from p (which holds
// n * width / 8 bytes: n is a multiple of 8), each passed to put(k, value).
template <class Put>
void unpack(const uint8_t* p, int64_t n, int width, Put&& put) {
    if (width == 0) {
        for (int64_t k = 0; k < n; ++k) put(k, 0);
        return;
    }
    if (width <= 32) {  // levels and dictionary indices: a value from one 8-byte load (its
        // bits start within the load's first byte and span at most 39 bits), then the last
        // few values from the bytes that are left, never reading past n * width / 8
        const uint64_t mask = (uint64_t{1} << width) - 1;
        const int64_t bytes = n * width / 8;
        int64_t k = 0;
        for (; k < n; ++k) {
            const int64_t bit = k * width;
            if ((bit >> 3) + 8 > bytes) break;
            uint64_t word;
            std::memcpy(&word, p + (bit >> 3), 8);
            put(k, (word >> (bit & 7)) & mask);
        }
        for (; k < n; ++k) {
            const int64_t bit = k * width;
            uint64_t word = 0;
            for (int64_t b = 0; b < 8 && (bit >> 3) + b < bytes; ++b) {
                word |= static_cast<uint64_t>(p[(bit >> 3) + b]) << (8 * b);
            }
            put(k, (word >> (bit & 7)) & mask);
        }
        return;
    }
    const unsigned __int128 mask =
        (static_cast<unsigned __int128>(1) << width) - 1;  // (width <= 64)
    unsigned __int128 acc = 0;
    int bits = 0;
    for (int64_t k = 0; k < n; ++k) {
        while (bits < width) {  // (at most width + 7 bits held: < 128)
            acc |= static_cast<unsigned __int128>(*p++) << bits;
            bits += 8;
        }
        put(k, static_cast<uint64_t>(acc & mask));
        acc >>= width;
        bits -= width;
    }
}

}  // namespace

int64_t decode_rle_hybrid(const uint8_t* data, int64_t size, int bit_width, int64_t count,
                          uint32_t* out) {
    if (bit_width < 0 || bit_width > 32) {
        throw std::invalid_argument("an RLE / bit-packed bit width must be 0-32, not " +
                                    std::to_string(bit_width));
    }
    const char* what = "RLE / bit-packed data";
    const int value_bytes = (bit_width + 7) / 8;
    int64_t pos = 0, done = 0;
    while (done < count) {
        const uint64_t header = uvarint(data, size, &pos, what);
        if (header & 1) {  // bit-packed: header >> 1 groups of 8 values
            const uint64_t groups = header >> 1;
            const int64_t left = size - pos;
            if (groups == 0 || (bit_width && groups > static_cast<uint64_t>(left / bit_width))) {
                throw CorruptData(std::string(what) + ": a bit-packed run of " +
                                  std::to_string(groups) + " groups in " + std::to_string(left) +
                                  " bytes");
            }
            // only the groups holding values still wanted are unpacked (a forged run of
            // 0-bit values may declare 2**62 groups)
            const uint64_t wanted = static_cast<uint64_t>(count - done + 7) / 8;
            const int64_t n = static_cast<int64_t>(groups < wanted ? groups : wanted) * 8;
            const int64_t take = n < count - done ? n : count - done;
            uint32_t* dst = out + done;
            unpack(data + pos, n, bit_width, [&](int64_t k, uint64_t v) {
                if (k < take) dst[k] = static_cast<uint32_t>(v);
            });
            pos += static_cast<int64_t>(groups) * bit_width;
            done += take;
        } else {  // a repeated value: header >> 1 times, in value_bytes bytes
            const uint64_t repeats = header >> 1;
            if (repeats == 0) throw CorruptData(std::string(what) + ": a run of no values");
            if (size - pos < value_bytes) {
                throw CorruptData(std::string(what) + " ends inside a run's value");
            }
            uint32_t v = 0;
            for (int b = 0; b < value_bytes; ++b) {
                v |= static_cast<uint32_t>(data[pos + b]) << (8 * b);
            }
            pos += value_bytes;
            const int64_t take = repeats < static_cast<uint64_t>(count - done)
                                     ? static_cast<int64_t>(repeats)
                                     : count - done;
            for (int64_t k = 0; k < take; ++k) out[done + k] = v;
            done += take;
        }
    }
    return pos;
}

int64_t decode_delta_binary_packed(const uint8_t* data, int64_t size, int64_t count,
                                   int64_t* out) {
    const char* what = "DELTA_BINARY_PACKED data";
    int64_t pos = 0;
    const uint64_t block = uvarint(data, size, &pos, what);
    const uint64_t miniblocks = uvarint(data, size, &pos, what);
    const uint64_t total = uvarint(data, size, &pos, what);
    const int64_t first = zigzag(uvarint(data, size, &pos, what));
    // (a block of at most 2**20 values: writers use 128 or 256)
    if (block == 0 || block % 128 || block > (1u << 20) || miniblocks == 0 ||
        block % miniblocks || (block / miniblocks) % 32) {
        throw CorruptData(std::string(what) + ": blocks of " + std::to_string(block) +
                          " values in " + std::to_string(miniblocks) + " miniblocks");
    }
    if (total != static_cast<uint64_t>(count)) {
        throw CorruptData(std::string(what) + " holds " + std::to_string(total) +
                          " values where " + std::to_string(count) + " were expected");
    }
    if (count == 0) return pos;
    const int64_t per = static_cast<int64_t>(block / miniblocks);
    uint64_t last = static_cast<uint64_t>(first);
    out[0] = first;
    int64_t done = 1;
    while (done < count) {
        const uint64_t min_delta = static_cast<uint64_t>(zigzag(uvarint(data, size, &pos, what)));
        if (size - pos < static_cast<int64_t>(miniblocks)) {
            throw CorruptData(std::string(what) + " ends inside a block's bit widths");
        }
        const uint8_t* widths = data + pos;
        pos += static_cast<int64_t>(miniblocks);
        for (uint64_t m = 0; m < miniblocks && done < count; ++m) {
            const int width = widths[m];
            if (width > 64) {
                throw CorruptData(std::string(what) + ": a miniblock of " +
                                  std::to_string(width) + "-bit values");
            }
            const int64_t bytes = per / 8 * width;
            if (size - pos < bytes) {
                throw CorruptData(std::string(what) + " ends inside a miniblock");
            }
            const int64_t take = per < count - done ? per : count - done;
            int64_t* dst = out + done;
            unpack(data + pos, per, width, [&](int64_t k, uint64_t v) {
                if (k < take) {
                    last += min_delta + v;  // (modulo 2**64)
                    dst[k] = static_cast<int64_t>(last);
                }
            });
            pos += bytes;
            done += take;
        }
    }
    return pos;
}

int64_t decode_delta_length_offsets(const uint8_t* data, int64_t size, int64_t count,
                                    int64_t* offsets, const char* what) {
    const int64_t start = decode_delta_binary_packed(data, size, count, offsets + 1);
    offsets[0] = 0;
    const int64_t room = size - start;
    for (int64_t k = 1; k <= count; ++k) {
        const int64_t length = offsets[k];
        if (length < 0 || length > room - offsets[k - 1]) {
            throw CorruptData(std::string(what) + ": string " + std::to_string(k - 1) +
                              "'s length " + std::to_string(length) +
                              " runs past the page's bytes");
        }
        offsets[k] = offsets[k - 1] + length;
    }
    return start;
}

int64_t decode_delta_byte_array_runs(const uint8_t* data, int64_t size, int64_t count,
                                     int64_t* prefix, int64_t* suffix_offsets,
                                     int64_t* out_size) {
    const char* what = "DELTA_BYTE_ARRAY data";
    const int64_t used = decode_delta_binary_packed(data, size, count, prefix);
    int64_t total = 0;
    for (int64_t k = 0; k < count; ++k) {  // (each at most 2**31, so the sum cannot wrap)
        if (prefix[k] < 0 || prefix[k] > 0x7FFFFFFF) {
            throw CorruptData(std::string(what) + ": a prefix of " + std::to_string(prefix[k]) +
                              " bytes");
        }
        total += prefix[k];
    }
    const int64_t start =
        used + decode_delta_length_offsets(data + used, size - used, count, suffix_offsets, what);
    *out_size = total + suffix_offsets[count];
    return start;
}

void check_value_count(int64_t count, int64_t most, const char* what) {
    if (count < 0 || count > most) {
        throw CorruptData(std::string(what) + ": " + std::to_string(count) +
                          " values cannot be in these bytes (at most " + std::to_string(most) +
                          ")");
    }
}

int64_t decode_plain_byte_arrays(const uint8_t* data, int64_t size, int64_t count,
                                 int64_t* offsets, uint8_t* out) {
    int64_t pos = 0, at = 0;
    offsets[0] = 0;
    for (int64_t k = 0; k < count; ++k) {
        if (size - pos < 4) throw CorruptData("PLAIN byte arrays end inside a length");
        uint32_t length = 0;
        std::memcpy(&length, data + pos, 4);  // (little-endian: x86-64 and aarch64)
        pos += 4;
        if (length > 0x7FFFFFFFu || static_cast<int64_t>(length) > size - pos) {
            throw CorruptData("a PLAIN byte array of " + std::to_string(length) +
                              " bytes runs past its page's " + std::to_string(size - pos));
        }
        if (length && out) std::memcpy(out + at, data + pos, length);
        pos += length;
        at += length;
        offsets[k + 1] = at;
    }
    return pos;
}

int64_t decode_delta_strings(const int64_t* prefix, const int64_t* suffix_offsets,
                             const uint8_t* suffixes, int64_t count, int64_t* offsets,
                             uint8_t* out, int64_t out_size) {
    int64_t at = 0, before = 0;  // the previous string's length
    offsets[0] = 0;
    for (int64_t k = 0; k < count; ++k) {
        const int64_t keep = prefix[k];
        const int64_t add = suffix_offsets[k + 1] - suffix_offsets[k];
        if (keep < 0 || keep > before) {
            throw CorruptData("DELTA_BYTE_ARRAY string " + std::to_string(k) + " keeps " +
                              std::to_string(keep) + " bytes of a string of " +
                              std::to_string(before));
        }
        if (add < 0 || keep + add > out_size - at) {
            throw CorruptData("DELTA_BYTE_ARRAY strings outgrow their " +
                              std::to_string(out_size) + " bytes");
        }
        // (memmove: the prefix is the previous string's own bytes, just before)
        if (keep) std::memmove(out + at, out + at - before, static_cast<size_t>(keep));
        if (add) std::memcpy(out + at + keep, suffixes + suffix_offsets[k], static_cast<size_t>(add));
        before = keep + add;
        at += before;
        offsets[k + 1] = at;
    }
    return at;
}

}  // namespace fsstgpu_native
