// Page headers read as formats/thrift_compact.py's reader and formats/raw_pages.py's _page
// read them: the same headers accepted, the same fields taken (a struct's first field of an
// id, as Struct.get), the same checks in the same order. Every Thrift value of a header is
// walked and checked (types, container counts against the bytes left, nesting at most 64
// deep, varints at most 10 bytes) whether it is used or not, as the Python reader builds them
// all; integers are held in 128 bits, as Python's are unbounded (a 10-byte varint has 70).
#include "page_headers.h"

#include <string>

#include "errors.h"

namespace fsstgpu_native {

namespace {

using i128 = __int128;

enum Type { BOOL_TRUE = 1, BOOL_FALSE, BYTE, I16, I32, I64, DOUBLE, BINARY, LIST, SET, MAP,
            STRUCT };
constexpr int kMaxDepth = 64;  // thrift_compact.MAX_DEPTH
constexpr int kIds = 9;        // the fields taken: ids 1-8

// What a struct's first field of an id held: nothing, an integer (its value), a bool, a
// struct (its own first fields, when asked for) or anything else.
enum Kind { ABSENT = 0, INT, BOOL, STRUCTURE, OTHER };

struct Taken {
    Kind kind[kIds] = {};
    i128 value[kIds] = {};
    bool boolean[kIds] = {};
};

struct Malformed {};  // the Python reader's ValueError / IndexError: "malformed"

class Reader {
public:
    Reader(const uint8_t* p, size_t n, size_t pos) : p_(p), n_(n), pos_(pos) {}
    size_t pos() const { return pos_; }

    uint8_t byte() {
        if (pos_ >= n_) throw Malformed{};
        return p_[pos_++];
    }

    // a ULEB128 varint of at most 10 bytes (70 bits)
    unsigned __int128 varint() {
        unsigned __int128 out = 0;
        for (int shift = 0; shift < 70; shift += 7) {
            const uint8_t b = byte();
            out |= (unsigned __int128)(b & 0x7F) << shift;
            if (!(b & 0x80)) return out;
        }
        throw Malformed{};  // (Python reads an 11th byte, or finds none: an error either way)
    }

    static i128 zigzag(unsigned __int128 v) { return (i128)(v >> 1) ^ -(i128)(v & 1); }

    void count_fits(unsigned __int128 size) {  // every element takes at least a byte
        if (size > (unsigned __int128)(n_ - pos_)) throw Malformed{};
    }

    // a value of `type` at `depth`; what it is goes to *kind / *number (when given), a
    // struct's first fields to *fields (when given)
    void value(int type, int depth, Kind* kind, i128* number, bool* boolean, Taken* fields) {
        if (type == I64 || type == I32 || type == I16) {
            const i128 v = zigzag(varint());
            if (kind) *kind = INT, *number = v;
            return;
        }
        if (kind) *kind = OTHER;
        if (type == BINARY) {
            const unsigned __int128 len = varint();
            if (len > (unsigned __int128)(n_ - pos_)) throw Malformed{};
            pos_ += (size_t)len;
            return;
        }
        if (depth > kMaxDepth) throw Malformed{};
        if (type == STRUCT) {
            if (kind) *kind = STRUCTURE;
            strct(depth + 1, fields);
            return;
        }
        if (type == LIST || type == SET) {
            const uint8_t head = byte();
            unsigned __int128 size = head >> 4;
            if (size == 15) size = varint();
            count_fits(size);
            for (size_t k = 0; k < (size_t)size; ++k) {
                value(head & 0x0F, depth + 1, nullptr, nullptr, nullptr, nullptr);
            }
            return;
        }
        if (type == BOOL_TRUE || type == BOOL_FALSE || type == BYTE) {
            const uint8_t b = byte();
            if (kind && type == BYTE) *kind = INT, *number = b;
            if (kind && type != BYTE) *kind = BOOL, *boolean = (b == BOOL_TRUE);
            return;
        }
        if (type == DOUBLE) {
            if (n_ - pos_ < 8) throw Malformed{};
            pos_ += 8;
            return;
        }
        if (type == MAP) {
            const unsigned __int128 size = varint();
            count_fits(size);
            if (size == 0) return;
            const uint8_t kinds = byte();
            for (size_t k = 0; k < (size_t)size; ++k) {
                value(kinds >> 4, depth + 1, nullptr, nullptr, nullptr, nullptr);
                value(kinds & 0x0F, depth + 1, nullptr, nullptr, nullptr, nullptr);
            }
            return;
        }
        throw Malformed{};  // (an unknown type)
    }

    // a struct's fields up to its STOP; the first of each id 1-8 into *taken (when given),
    // and for ids 5, 7 and 8 (the page headers' own headers) their first fields too
    void strct(int depth, Taken* taken, Taken* subs = nullptr) {
        i128 last = 0;
        bool seen[kIds] = {};
        for (;;) {
            const uint8_t head = byte();
            if (head == 0) return;
            const int delta = head >> 4, type = head & 0x0F;
            const i128 id = delta ? last + delta : zigzag(varint());
            const int slot = (taken && id >= 1 && id < kIds && !seen[(int)id]) ? (int)id : 0;
            if (slot) seen[slot] = true;
            if (type == BOOL_TRUE || type == BOOL_FALSE) {
                if (slot) taken->kind[slot] = BOOL, taken->boolean[slot] = (type == BOOL_TRUE);
            } else if (slot) {
                Taken* sub = (subs && (slot == 5 || slot == 7 || slot == 8)) ? &subs[slot] : nullptr;
                value(type, depth, &taken->kind[slot], &taken->value[slot],
                      &taken->boolean[slot], sub);
            } else {
                value(type, depth, nullptr, nullptr, nullptr, nullptr);
            }
            last = id;
        }
    }

private:
    const uint8_t* p_;
    size_t n_;
    size_t pos_;
};

std::string describe(const Taken& t, int id) {  // (the Python reader's repr, for the numbers)
    switch (t.kind[id]) {
        case ABSENT: return "None";
        case BOOL: return t.boolean[id] ? "True" : "False";
        case INT: {
            i128 v = t.value[id];
            if (v >= INT64_MIN && v <= INT64_MAX) return std::to_string((int64_t)v);
            return v < 0 ? "a negative number over 64 bits" : "a number over 64 bits";
        }
        case STRUCTURE: return "a struct";
        default: return "a value of another type";
    }
}

// raw_pages._int: a non-negative integer of at most 2**31 - 1
int64_t field(const Taken& t, int id, size_t at) {
    if (t.kind[id] != INT || t.value[id] < 0 || t.value[id] > INT32_MAX) {
        throw CorruptData("the page header at byte " + std::to_string(at) +
                          " has no valid field " + std::to_string(id) + " (" + describe(t, id) +
                          ")");
    }
    return (int64_t)t.value[id];
}

}  // namespace

std::vector<int64_t> page_headers(const uint8_t* chunk, size_t size, int64_t max_pages) {
    std::vector<int64_t> out;
    size_t at = 0;
    int64_t pages = 0;
    while (at < size) {
        if (pages >= max_pages) {
            throw CorruptData("over " + std::to_string(max_pages) +
                              " pages in one column chunk");
        }
        Taken header;
        Taken subs[kIds];
        Reader reader(chunk, size, at);
        try {
            reader.strct(0, &header, subs);
        } catch (const Malformed&) {
            throw CorruptData("the page header at byte " + std::to_string(at) +
                              " is malformed");
        }
        const size_t pos = reader.pos();
        const std::string page = "the page at byte " + std::to_string(at);
        const bool typed = header.kind[1] == INT;
        const i128 type = header.value[1];
        if (!typed || !(type == 0 || type == 2 || type == 3)) {
            throw CorruptData(page + " has page type " + describe(header, 1) +
                              ", not a data or dictionary page");
        }
        const char* kind = type == 0 ? "data" : type == 2 ? "dictionary" : "data_v2";
        const int64_t uncompressed = field(header, 2, at);
        const int64_t stored = field(header, 3, at);
        if ((size_t)stored > size - pos) {
            throw CorruptData(page + " (" + std::to_string(stored) + " bytes) runs past its "
                              "column chunk's " + std::to_string(size) + " bytes");
        }
        int64_t crc = -1;
        if (header.kind[4] != ABSENT) {
            if (header.kind[4] != INT || header.value[4] < INT32_MIN ||
                header.value[4] > INT32_MAX) {
                throw CorruptData(page + " has a bad CRC field");
            }
            crc = (int64_t)(uint32_t)(int32_t)(int64_t)header.value[4];
        }
        const int id = type == 0 ? 5 : type == 2 ? 7 : 8;
        if (header.kind[id] != STRUCTURE) {
            throw CorruptData(std::string("the ") + kind + " page at byte " +
                              std::to_string(at) + " has no " + kind + " header");
        }
        const Taken& sub = subs[id];
        int64_t encoding, levels = 0, compressed = 1, levels_encoding = 3, rep = 0;
        if (type == 3) {
            encoding = field(sub, 4, at);
            rep = field(sub, 6, at);
            levels = field(sub, 5, at) + rep;
            compressed = !(sub.kind[7] == BOOL && !sub.boolean[7]);
            if (levels > stored || levels > uncompressed) {
                throw CorruptData(page + " has " + std::to_string(levels) + " bytes of levels "
                                  "in a page of " + std::to_string(stored));
            }
        } else {
            encoding = field(sub, 2, at);
            if (type == 0) levels_encoding = field(sub, 3, at);
        }
        const int64_t values = field(sub, 1, at);
        const int64_t row[kPageFields] = {(int64_t)type, encoding, values, (int64_t)pos,
                                          stored, uncompressed, crc, levels, compressed,
                                          levels_encoding, rep, (int64_t)at};
        out.insert(out.end(), row, row + kPageFields);
        at = pos + (size_t)stored;
        ++pages;
    }
    return out;
}

}  // namespace fsstgpu_native
