// An fsst column's leaves decoded from their pages (parquet_leaves.h). The encodings are the
// Parquet format's: levels and dictionary indices in the RLE / bit-packed hybrid (a ULEB128
// header, bit 0 set: that many groups of 8 bit-packed values, least significant bit first;
// clear: a run of one value in ceil(w / 8) little-endian bytes), a v1 data page's levels
// behind a 4-byte length; byte arrays PLAIN (4-byte length, bytes), DELTA_LENGTH_BYTE_ARRAY
// (every length DELTA_BINARY_PACKED, then the bytes back to back) or dictionary-coded (a bit
// width byte, then the indices).
#include "parquet_leaves.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "errors.h"
#include "parquet_delta.h"

namespace fsstgpu_native {

namespace {

constexpr int64_t kDataPage = 0, kDictionaryPage = 2;
constexpr int64_t kPlain = 0, kPlainDictionary = 2, kDeltaBinaryPacked = 5,
                  kDeltaLengthByteArray = 6, kRleDictionary = 8;
constexpr int kLevelWidth = 2;  // bits of a level up to 2 (parquet: bit width of max level)
constexpr uint32_t kMaxLevel = 2;

[[noreturn]] void bad(const std::string& what) { throw CorruptData(what); }

uint64_t uleb(const uint8_t* buf, int64_t& pos, int64_t end) {
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
        if (pos >= end) bad("a varint runs past its run's end");
        const uint8_t b = buf[pos++];
        if (shift == 63 && b > 1) bad("a varint of over 64 bits");
        v |= uint64_t(b & 0x7F) << shift;
        if (!(b & 0x80)) return v;
    }
}

// Bits bit .. bit + w - 1 (w 1-32) of the avail bytes at base (bit + w <= 8 * avail).
inline uint32_t bits_at(const uint8_t* base, int64_t avail, int64_t bit, int w) {
    const int64_t byte = bit >> 3;
    const int64_t have = avail - byte;
    uint64_t lo = 0;
    std::memcpy(&lo, base + byte, size_t(have < 8 ? have : 8));  // little-endian hosts
    return uint32_t((lo >> (bit & 7)) & ((uint64_t(1) << w) - 1));
}

// The hybrid run (see rle_hybrid) into out of type T (uint8_t for levels, uint32_t for
// dictionary indices): runs of one value are filled, bit-packed groups unpacked.
template <class T>
int64_t hybrid(const uint8_t* buf, int64_t pos, int64_t end, int w, int64_t count, T* out) {
    if (w < 0 || w > 32) bad("a hybrid run of bit width " + std::to_string(w));
    const int64_t vbytes = (w + 7) / 8;
    int64_t k = 0;
    while (k < count) {
        const uint64_t header = uleb(buf, pos, end);
        if (header & 1) {
            const uint64_t groups = header >> 1;
            if (groups == 0 || groups > (uint64_t(1) << 40)) bad("a bit-packed run of " +
                                                                 std::to_string(groups) +
                                                                 " groups");
            const int64_t bytes = int64_t(groups) * w;
            if (end - pos < bytes) bad("a bit-packed run past its end");
            const int64_t have = int64_t(groups) * 8;
            const int64_t take = count - k < have ? count - k : have;
            if (w == 0) {
                std::memset(out + k, 0, size_t(take) * sizeof(T));
            } else {
                for (int64_t j = 0; j < take; ++j) out[k + j] = T(bits_at(buf + pos, bytes, j * w, w));
            }
            k += take;
            pos += bytes;
        } else {
            const uint64_t run = header >> 1;
            if (run == 0) bad("an empty RLE run");
            if (end - pos < vbytes) bad("an RLE run's value past its end");
            uint64_t v = 0;
            std::memcpy(&v, buf + pos, size_t(vbytes));
            pos += vbytes;
            if (w < 32 && (v >> w) != 0) bad("an RLE value wider than its bit width");
            const int64_t take = uint64_t(count - k) < run ? count - k : int64_t(run);
            std::fill(out + k, out + k + take, T(v));
            k += take;
        }
    }
    return pos;
}

// Bits row .. row + count - 1 of row_bits / value_bits from the levels (after a check that
// none is above 2); returns the levels of 2.
int64_t level_bits(const uint8_t* levels, int64_t count, int64_t row, uint8_t* row_bits,
                   uint8_t* value_bits) {
    uint8_t above = 0;
    int64_t nv = 0;
    int64_t i = 0;
    for (; i < count && ((row + i) & 7); ++i) {  // up to a byte boundary
        const uint8_t lv = levels[i];
        above |= lv > kMaxLevel;
        row_bits[(row + i) >> 3] |= uint8_t((lv >= 1) << ((row + i) & 7));
        value_bits[(row + i) >> 3] |= uint8_t((lv == kMaxLevel) << ((row + i) & 7));
        nv += lv == kMaxLevel;
    }
    for (; i + 8 <= count; i += 8) {  // whole bytes
        uint8_t r = 0, v = 0;
        for (int j = 0; j < 8; ++j) {
            const uint8_t lv = levels[i + j];
            above |= lv > kMaxLevel;
            r |= uint8_t((lv >= 1) << j);
            v |= uint8_t((lv == kMaxLevel) << j);
        }
        row_bits[(row + i) >> 3] = r;
        value_bits[(row + i) >> 3] = v;
        nv += __builtin_popcount(v);
    }
    for (; i < count; ++i) {
        const uint8_t lv = levels[i];
        above |= lv > kMaxLevel;
        row_bits[(row + i) >> 3] |= uint8_t((lv >= 1) << ((row + i) & 7));
        value_bits[(row + i) >> 3] |= uint8_t((lv == kMaxLevel) << ((row + i) & 7));
        nv += lv == kMaxLevel;
    }
    if (above) bad("a definition level above 2");
    return nv;
}

uint32_t le32(const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

// Where one leaf's rows are written as its pages are decoded.
struct Sink {
    LeafKind kind;
    LeafRows& out;
    int64_t n;                // the row group's rows
    int64_t row = 0;          // rows done
    int64_t ndict = -1;       // dictionary entries (-1: no dictionary page yet)
    const uint8_t* dict = nullptr;  // the dictionary page's payload
    std::vector<uint64_t> dict_values;  // an integer leaf's dictionary
};

void read_dictionary(Sink& s, const LeafPage& p) {
    if (s.ndict >= 0) bad("a second dictionary page");
    if (s.row) bad("a dictionary page after data pages");
    if (p.encoding != kPlain && p.encoding != kPlainDictionary) bad("a dictionary not PLAIN");
    if (p.num_values < 0) bad("a dictionary of a negative count");
    s.dict = p.body;
    s.ndict = p.num_values;
    if (s.kind == LeafKind::kInt32 || s.kind == LeafKind::kInt64) {
        const int64_t width = s.kind == LeafKind::kInt32 ? 4 : 8;
        if (p.num_values > p.size / width) bad("a dictionary page shorter than its entries");
        s.dict_values.resize(size_t(p.num_values));
        for (int64_t j = 0; j < p.num_values; ++j) {
            uint64_t v = 0;
            std::memcpy(&v, p.body + j * width, size_t(width));
            s.dict_values[size_t(j)] = v;
        }
        return;
    }
    auto& entries = s.out.entries;
    entries.clear();
    int64_t pos = 0;
    for (int64_t j = 0; j < p.num_values; ++j) {
        if (p.size - pos < 4) bad("a dictionary entry runs past its page");
        const int64_t len = le32(p.body + pos);
        pos += 4;
        if (p.size - pos < len) bad("a dictionary entry runs past its page");
        entries.push_back(pos);
        entries.push_back(len);
        pos += len;
    }
}

// The nv dictionary indices at body[pos:end] (a bit width byte, then the hybrid run).
void read_indices(const uint8_t* body, int64_t pos, int64_t end, int64_t nv,
                  std::vector<uint32_t>& index) {
    index.resize(size_t(nv));
    if (nv == 0) return;
    if (pos >= end) bad("dictionary indices without their bit width");
    const int w = body[pos++];
    if (w > 32) bad("dictionary indices of over 32 bits");
    rle_hybrid(body, pos, end, w, nv, index.data());
}

void data_page(Sink& s, const LeafPage& p, std::vector<uint8_t>& levels,
               std::vector<uint32_t>& index, std::vector<int64_t>& sizes) {
    const int64_t rows = p.num_values;
    if (rows < 0 || rows > s.n - s.row) {
        bad("data pages of more rows than the row group");
    }
    if (p.size < 4) bad("a data page without its levels' length");
    const int64_t level_bytes = le32(p.body);
    if (level_bytes > p.size - 4) bad("a data page's levels run past it");
    levels.resize(size_t(rows));
    hybrid(p.body, 4, 4 + level_bytes, kLevelWidth, rows, levels.data());
    const int64_t nv = level_bits(levels.data(), rows, s.row, s.out.row_bits.data(),
                                  s.out.value_bits.data());
    const bool dense = nv == rows;  // every row has its value: values map to rows one to one
    const uint8_t* body = p.body;
    int64_t pos = 4 + level_bytes;
    const int64_t end = p.size;
    const bool dictionary = p.encoding == kRleDictionary || p.encoding == kPlainDictionary;
    if (dictionary) {
        if (s.ndict < 0) bad("dictionary indices without a dictionary page");
        read_indices(body, pos, end, nv, index);
        for (int64_t j = 0; j < nv; ++j) {
            if (index[size_t(j)] >= uint64_t(s.ndict)) bad("a dictionary index past its entries");
        }
    } else if (s.kind == LeafKind::kIndices) {
        bad("table indices not dictionary-coded");
    }
    LeafRows& out = s.out;
    int64_t k = 0;  // the page's values taken
    switch (s.kind) {
    case LeafKind::kIndices:
        for (int64_t i = 0; i < rows; ++i) {
            out.index[size_t(s.row + i)] = levels[size_t(i)] == kMaxLevel ? index[size_t(k++)] : 0;
        }
        break;
    case LeafKind::kInt32:
    case LeafKind::kInt64: {
        const int64_t width = s.kind == LeafKind::kInt32 ? 4 : 8;
        std::vector<int64_t> deltas;
        if (p.encoding == kDeltaBinaryPacked) {
            delta_binary_packed(body, end, pos, end, nv, deltas);
            if (int64_t(deltas.size()) != nv) bad("a page of fewer values than levels");
        } else if (p.encoding == kPlain) {
            if (nv > (end - pos) / width) bad("a page of fewer values than levels");
        } else if (!dictionary) {
            bad("an integer page of another encoding");
        }
        for (int64_t i = 0; i < rows; ++i) {
            uint64_t v = 0;
            if (levels[size_t(i)] == kMaxLevel) {
                if (dictionary) {
                    v = s.dict_values[index[size_t(k)]];
                } else if (p.encoding == kPlain) {
                    std::memcpy(&v, body + pos + k * width, size_t(width));
                } else {
                    v = uint64_t(deltas[size_t(k)]);
                    if (width == 4) v &= 0xFFFFFFFFu;  // INT32: the low 32 bits, wrapped
                }
                ++k;
            }
            out.values[size_t(s.row + i)] = v;
        }
        break;
    }
    case LeafKind::kBytes: {
        // each value's (start in body or dictionary, size)
        sizes.resize(size_t(2 * nv));
        if (dictionary) {
            for (int64_t j = 0; j < nv; ++j) {
                sizes[size_t(2 * j)] = out.entries[size_t(2 * index[size_t(j)])];
                sizes[size_t(2 * j + 1)] = out.entries[size_t(2 * index[size_t(j)] + 1)];
            }
        } else if (p.encoding == kPlain) {
            for (int64_t j = 0; j < nv; ++j) {
                if (end - pos < 4) bad("a PLAIN value runs past its page");
                const int64_t len = le32(body + pos);
                pos += 4;
                if (end - pos < len) bad("a PLAIN value runs past its page");
                sizes[size_t(2 * j)] = pos;
                sizes[size_t(2 * j + 1)] = len;
                pos += len;
            }
        } else if (p.encoding == kDeltaLengthByteArray) {
            // the values' bytes lie back to back, in row order: one copy, then the offsets
            std::vector<int64_t>& lens = sizes;
            pos = delta_binary_packed(body, end, pos, end, nv, lens);
            if (int64_t(lens.size()) != nv) bad("a page of fewer lengths than levels");
            int64_t total = 0;
            for (int64_t j = 0; j < nv; ++j) {
                const int64_t len = lens[size_t(j)];
                if (len < 0 || len > end - pos - total) bad("DELTA_LENGTH_BYTE_ARRAY values "
                                                            "run past their page");
                total += len;
            }
            out.data.insert(out.data.end(), body + pos, body + pos + total);
            int64_t* offsets = out.offsets.data() + s.row;
            for (int64_t i = 0, j = 0; i < rows; ++i) {
                const int64_t len = dense || levels[size_t(i)] == kMaxLevel ? lens[size_t(j++)]
                                                                             : 0;
                offsets[i + 1] = offsets[i] + len;
            }
            s.row += rows;
            return;
        } else {
            bad("a byte array page of another encoding");
        }
        const uint8_t* src = dictionary ? s.dict : body;
        for (int64_t i = 0; i < rows; ++i) {
            int64_t len = 0;
            if (levels[size_t(i)] == kMaxLevel) {
                len = sizes[size_t(2 * k + 1)];
                const uint8_t* from = src + sizes[size_t(2 * k)];
                out.data.insert(out.data.end(), from, from + len);
                ++k;
            }
            out.offsets[size_t(s.row + i + 1)] = out.offsets[size_t(s.row + i)] + len;
        }
        break;
    }
    }
    s.row += rows;
}

int64_t clear_bits(const std::vector<uint8_t>& bits, int64_t n) {
    int64_t set = 0;
    for (int64_t i = 0; i < n / 8; ++i) set += __builtin_popcount(bits[size_t(i)]);
    if (n % 8) set += __builtin_popcount(bits[size_t(n / 8)] & ((1u << (n % 8)) - 1));
    return n - set;
}

}  // namespace

int64_t rle_hybrid(const uint8_t* buf, int64_t pos, int64_t end, int w, int64_t count,
                   uint32_t* out) {
    return hybrid(buf, pos, end, w, count, out);
}

void decode_leaf(LeafKind kind, int64_t n, const std::vector<LeafPage>& pages, LeafRows& out) {
    if (n < 0) bad("a negative row count");
    const size_t nbytes = size_t((n + 7) / 8);
    out.row_bits.assign(nbytes, 0);
    out.value_bits.assign(nbytes, 0);
    out.offsets.clear();
    out.data.clear();
    out.values.clear();
    out.index.clear();
    out.entries.clear();
    if (kind == LeafKind::kBytes) out.offsets.assign(size_t(n + 1), 0);
    if (kind == LeafKind::kInt32 || kind == LeafKind::kInt64) out.values.assign(size_t(n), 0);
    if (kind == LeafKind::kIndices) out.index.assign(size_t(n), 0);
    if (kind == LeafKind::kBytes) {
        int64_t bound = 0;  // a PLAIN or DELTA page holds at most its size in bytes
        for (const LeafPage& p : pages) bound += p.type == kDataPage ? p.size : 0;
        out.data.reserve(size_t(bound));
    }
    Sink s{kind, out, n};
    std::vector<uint8_t> levels;
    std::vector<uint32_t> index;
    std::vector<int64_t> sizes;
    for (const LeafPage& p : pages) {
        if (p.size < 0 || (p.size && !p.body)) bad("a page without its payload");
        if (p.type == kDictionaryPage) {
            read_dictionary(s, p);
        } else if (p.type == kDataPage) {
            data_page(s, p, levels, index, sizes);
        } else {
            bad("a page of type " + std::to_string(p.type));
        }
    }
    if (s.row != n) bad("data pages of " + std::to_string(s.row) + " rows in a row group of " +
                        std::to_string(n));
    out.row_nulls = clear_bits(out.row_bits, n);
    out.value_nulls = clear_bits(out.value_bits, n);
}

}  // namespace fsstgpu_native
