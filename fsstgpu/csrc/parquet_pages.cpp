// page_headers (parquet_pages.h): a Thrift compact reader that keeps the few i32 and bool fields
// of a page header and of its nested data / dictionary / v2 header, and skips everything else
// generically (statistics, fields a newer writer adds) with bounded nesting. No string is made
// on the way: a message is built only once a page is found wrong.
#include "parquet_pages.h"

#include <cstdint>
#include <initializer_list>
#include <string>

#include "errors.h"

namespace fsstgpu_native {
namespace {

// Thrift compact protocol's type ids: a field header's low nibble, a container's element type
enum : uint8_t {
    kStop = 0, kBoolTrue = 1, kBoolFalse = 2, kByte = 3, kI16 = 4, kI32 = 5, kI64 = 6,
    kDouble = 7, kBinary = 8, kList = 9, kSet = 10, kMap = 11, kStruct = 12, kUuid = 13
};

// Parquet's headers nest three deep (statistics inside a data page header); Thrift's own
// readers allow 64. Deeper than this is a forged header, refused long before the stack is.
constexpr int kMaxDepth = 16;

// The wanted i32 and bool fields (ids 1..15, bits of i32s and bools) of one struct, a bool as
// 0 / 1; bit id of seen says the field was there, bit 0 that the struct itself was. Any other
// field, or a wanted one of another wire type, is skipped as a Thrift generated reader skips
// it, so a forged type cannot pass for a field.
struct Fields {
    uint32_t i32s = 0, bools = 0;
    uint32_t seen = 0;
    int64_t value[16];
    bool has(int id) const { return (seen >> id) & 1; }
};

std::string str(int64_t v) { return std::to_string(v); }

class Cursor {
  public:
    Cursor(const uint8_t* buf, int64_t start, int64_t end) : pos(start), buf_(buf), end_(end) {}

    int64_t pos;
    // Which page is being read and where its header began: every message names them.
    int64_t page = 0, header = 0;

    [[noreturn]] void fail(const std::string& what) const {
        throw CorruptData("Parquet page " + str(page) + " (header at byte " + str(header) +
                          "): " + what);
    }

    uint8_t byte() {
        if (pos >= end_) fail("its header runs past the chunk's end at byte " + str(end_));
        return buf_[pos++];
    }

    // ULEB128 of at most 64 bits: ten bytes, the tenth carrying bit 63 alone. Most are one
    // byte (field values, small sizes): that case takes one bounds check.
    uint64_t varint() {
        if (pos < end_ && !(buf_[pos] & 0x80)) return buf_[pos++];
        uint64_t v = 0;
        for (int shift = 0; shift < 63; shift += 7) {
            const uint8_t b = byte();
            v |= uint64_t(b & 0x7F) << shift;
            if (!(b & 0x80)) return v;
        }
        const uint8_t last = byte();
        if (last > 1) fail("a varint of over 64 bits at byte " + str(pos - 1));
        return v | uint64_t(last) << 63;
    }

    int64_t zigzag() {
        const uint64_t z = varint();
        return int64_t((z >> 1) ^ (0 - (z & 1)));
    }

    int64_t i32() {
        const int64_t v = zigzag();
        if (v < INT32_MIN || v > INT32_MAX) fail("an i32 field holds " + str(v));
        return v;
    }

    void advance(uint64_t n) {
        if (n > uint64_t(end_ - pos)) {
            fail("a field of " + std::to_string(n) + " bytes runs past the chunk's end at byte " +
                 str(end_));
        }
        pos += int64_t(n);
    }

    // Read a struct (after its opening, up to and with its stop byte), keeping f's fields
    // (f may be null: skipped) and reading struct fields with an id below 16 into sub[id]
    // where one is given (sub may be null).
    void read_struct(Fields* f, Fields* const* sub, int depth) {
        if (depth > kMaxDepth) fail("Thrift structs nest over " + str(kMaxDepth) + " deep");
        if (f) f->seen = 1;  // bit 0: the struct was there (field ids start at 1)
        int64_t last = 0;
        for (;;) {
            const uint8_t head = byte();
            const uint8_t type = head & 0x0F;
            if (type == kStop) return;
            last = field_id(head >> 4, last);
            const int id = last > 0 && last < 16 ? int(last) : 0;  // 0: not one to keep
            const bool is_bool = type == kBoolTrue || type == kBoolFalse;
            if (f && is_bool && (f->bools >> id & 1)) {
                keep(*f, id, type == kBoolTrue);
            } else if (f && type == kI32 && (f->i32s >> id & 1)) {
                keep(*f, id, i32());
            } else if (id && type == kStruct && sub && sub[id]) {
                read_struct(sub[id], nullptr, depth + 1);
            } else if (!is_bool) {  // a bool field's value is its type: nothing to skip
                skip(type, depth);
            }
        }
    }

  private:
    const uint8_t* buf_;
    int64_t end_;

    static void keep(Fields& f, int id, int64_t v) {
        f.value[id] = v;
        f.seen |= uint32_t(1) << id;
    }

    // A field header's id: the previous one plus the header's delta, or (delta 0) an i16.
    int64_t field_id(int delta, int64_t last) {
        if (delta) return last + delta;
        const int64_t id = zigzag();
        if (id < INT16_MIN || id > INT16_MAX) fail("a field id of " + str(id));
        return id;
    }

    // One value of a field or container element of the given type (a bool element is a byte).
    void skip(uint8_t type, int depth) {
        switch (type) {
            case kBoolTrue: case kBoolFalse: case kByte: advance(1); return;
            case kI16: case kI32: case kI64: varint(); return;
            case kDouble: advance(8); return;
            case kBinary: advance(varint()); return;
            case kUuid: advance(16); return;
            case kList: case kSet: skip_list(depth + 1); return;
            case kMap: skip_map(depth + 1); return;
            case kStruct: read_struct(nullptr, nullptr, depth + 1); return;
            default: fail("an unknown Thrift type " + str(type) + " at byte " + str(pos - 1));
        }
    }

    // Each element takes a byte at least: a count over the bytes left is refused at once, and
    // the skipping of any forged header costs time in its length only.
    void check_count(uint64_t count, uint64_t per) {
        if (count > uint64_t(end_ - pos) / per) {
            fail("a Thrift container of " + std::to_string(count) + " elements in the " +
                 str(end_ - pos) + " bytes left");
        }
    }

    void skip_list(int depth) {
        if (depth > kMaxDepth) fail("Thrift containers nest over " + str(kMaxDepth) + " deep");
        const uint8_t head = byte();
        const uint64_t count = (head >> 4) == 15 ? varint() : uint64_t(head >> 4);
        check_count(count, 1);
        for (uint64_t k = 0; k < count; ++k) skip(head & 0x0F, depth);
    }

    void skip_map(int depth) {
        if (depth > kMaxDepth) fail("Thrift containers nest over " + str(kMaxDepth) + " deep");
        const uint64_t count = varint();
        if (!count) return;
        const uint8_t types = byte();
        check_count(count, 2);
        for (uint64_t k = 0; k < count; ++k) {
            skip(types >> 4, depth);
            skip(types & 0x0F, depth);
        }
    }
};

// PageType, PageHeader's field ids (parquet.thrift) and those of the headers nested in it (a
// dictionary page header's num_values and encoding have the data page header's ids)
enum : int { kDataPage = 0, kDictionaryPage = 2, kDataPageV2 = 3 };
enum : int { kType = 1, kUncompressed = 2, kCompressed = 3, kCrcField = 4, kDataHeader = 5,
             kDictHeader = 7, kV2Header = 8 };
enum : int { kDataValues = 1, kDataEncoding = 2, kDefEncoding = 3, kRepEncoding = 4 };
enum : int { kV2Values = 1, kV2Nulls = 2, kV2Rows = 3, kV2Encoding = 4, kV2DefBytes = 5,
             kV2RepBytes = 6, kV2Compressed = 7 };

constexpr uint32_t ids(std::initializer_list<int> list) {
    uint32_t bits = 0;
    for (int id : list) bits |= uint32_t(1) << id;
    return bits;
}

// Fail unless the struct f was there with its required fields (named in names).
template <int N>
void require(const Cursor& c, const Fields& f, const char* what, const int (&fields)[N],
             const char* const (&names)[N]) {
    if (!f.has(0)) c.fail(std::string("its header has no ") + what + ", which its type needs");
    for (int k = 0; k < N; ++k) {
        if (!f.has(fields[k])) c.fail(std::string(what) + " lacks its " + names[k]);
    }
}

void check_nonnegative(const Cursor& c, int64_t v, const char* name) {
    if (v < 0) c.fail(std::string(name) + " is " + str(v));
}

// The counts of the data / dictionary / v2 header that the page's type calls for, into row.
void page_details(const Cursor& c, int64_t type, const Fields& data, const Fields& dict,
                  const Fields& v2, int64_t* row) {
    row[kNumValues] = 0;
    row[kEncoding] = -1;
    row[kDefLevelBytes] = row[kRepLevelBytes] = 0;
    row[kIsCompressed] = 1;
    if (type == kDataPage) {
        require(c, data, "data_page_header",
                {kDataValues, kDataEncoding, kDefEncoding, kRepEncoding},
                {"num_values", "encoding", "definition_level_encoding",
                 "repetition_level_encoding"});
        row[kNumValues] = data.value[kDataValues];
        row[kEncoding] = data.value[kDataEncoding];
    } else if (type == kDictionaryPage) {
        require(c, dict, "dictionary_page_header",
                {kDataValues, kDataEncoding}, {"num_values", "encoding"});
        row[kNumValues] = dict.value[kDataValues];
        row[kEncoding] = dict.value[kDataEncoding];
    } else if (type == kDataPageV2) {
        require(c, v2, "data_page_header_v2",
                {kV2Values, kV2Nulls, kV2Rows, kV2Encoding, kV2DefBytes, kV2RepBytes},
                {"num_values", "num_nulls", "num_rows", "encoding",
                 "definition_levels_byte_length", "repetition_levels_byte_length"});
        row[kNumValues] = v2.value[kV2Values];
        row[kEncoding] = v2.value[kV2Encoding];
        row[kDefLevelBytes] = v2.value[kV2DefBytes];
        row[kRepLevelBytes] = v2.value[kV2RepBytes];
        row[kIsCompressed] = v2.has(kV2Compressed) ? v2.value[kV2Compressed] : 1;
        check_nonnegative(c, v2.value[kV2Nulls], "num_nulls");
        check_nonnegative(c, v2.value[kV2Rows], "num_rows");
    } else {
        return;  // an index page, or a type this reader does not know: no counts to check
    }
    check_nonnegative(c, row[kNumValues], "num_values");
    check_nonnegative(c, row[kEncoding], "the encoding");
}

// v2's levels are stored uncompressed ahead of the values, counted in both sizes; an
// uncompressed v2 page is its payload as it is.
void check_v2_sizes(const Cursor& c, const int64_t* row) {
    check_nonnegative(c, row[kDefLevelBytes], "definition_levels_byte_length");
    check_nonnegative(c, row[kRepLevelBytes], "repetition_levels_byte_length");
    const int64_t levels = row[kDefLevelBytes] + row[kRepLevelBytes];  // two i32: no overflow
    if (levels > row[kCompressedSize] || levels > row[kUncompressedSize]) {
        c.fail("levels of " + str(levels) + " bytes in a page of " + str(row[kCompressedSize]) +
               " bytes (" + str(row[kUncompressedSize]) + " uncompressed)");
    }
    if (!row[kIsCompressed] && row[kCompressedSize] != row[kUncompressedSize]) {
        c.fail("an uncompressed page of " + str(row[kCompressedSize]) + " bytes says " +
               str(row[kUncompressedSize]));
    }
}

// The page whose header starts at c.pos: its row, checked; c.pos is left past its payload.
void read_page(Cursor& c, int64_t end, int64_t* row) {
    Fields top, data, dict, v2;
    top.i32s = ids({kType, kUncompressed, kCompressed, kCrcField});
    data.i32s = ids({kDataValues, kDataEncoding, kDefEncoding, kRepEncoding});
    dict.i32s = ids({kDataValues, kDataEncoding});
    v2.i32s = ids({kV2Values, kV2Nulls, kV2Rows, kV2Encoding, kV2DefBytes, kV2RepBytes});
    v2.bools = ids({kV2Compressed});  // (the dictionary header's is_sorted is not needed)
    Fields* sub[16] = {};
    sub[kDataHeader] = &data;
    sub[kDictHeader] = &dict;
    sub[kV2Header] = &v2;
    row[kHeaderOffset] = c.pos;
    c.read_struct(&top, sub, 0);
    if (!top.has(kType) || !top.has(kUncompressed) || !top.has(kCompressed)) {
        c.fail("its header lacks the page type or a size");
    }
    row[kPageType] = top.value[kType];
    row[kPayloadOffset] = c.pos;
    row[kCompressedSize] = top.value[kCompressed];
    row[kUncompressedSize] = top.value[kUncompressed];
    row[kHasCrc] = top.has(kCrcField);
    row[kCrc] = top.has(kCrcField) ? int64_t(uint32_t(top.value[kCrcField])) : 0;
    check_nonnegative(c, row[kCompressedSize], "compressed_page_size");
    check_nonnegative(c, row[kUncompressedSize], "uncompressed_page_size");
    if (row[kCompressedSize] > end - c.pos) {
        c.fail("its payload of " + str(row[kCompressedSize]) + " bytes at byte " + str(c.pos) +
               " runs past the chunk's end at byte " + str(end));
    }
    page_details(c, row[kPageType], data, dict, v2, row);
    if (row[kPageType] == kDataPageV2) check_v2_sizes(c, row);
    c.pos += row[kCompressedSize];
}

}  // namespace

void page_headers(const uint8_t* buf, int64_t size, int64_t start, int64_t end,
                  std::vector<int64_t>& rows) {
    if (start < 0 || start > end || end > size) {
        throw CorruptData("Parquet pages at bytes " + str(start) + " to " + str(end) +
                          " lie outside the " + str(size) + " bytes given");
    }
    Cursor c(buf, start, end);
    // (a few dozen header bytes a page at least: the guess saves most regrowing)
    rows.reserve(rows.size() + size_t(kPageFields) * size_t(1 + (end - start) / 4096));
    for (int64_t page = 0; c.pos < end; ++page) {
        c.page = page;
        c.header = c.pos;
        const size_t at = rows.size();
        rows.resize(at + kPageFields);
        read_page(c, end, rows.data() + at);
    }
}

}  // namespace fsstgpu_native
