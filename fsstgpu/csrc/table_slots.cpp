// Symbol tables read many at once (table_slots.h): the bytes are untrusted (a file's table
// dictionary), so each table's symbols are bounds-checked against the data before any is
// read, and a table that fails writes nothing.
#include "table_slots.h"

namespace fsstgpu_native {

int64_t symbol_slots(const uint8_t* data, int64_t size, const int64_t* starts,
                     const uint8_t* counts, int64_t ntables, uint64_t* packed,
                     uint8_t* lengths, uint8_t* ok) {
    int64_t out = 0;
    for (int64_t t = 0; t < ntables; ++t) {
        const uint8_t* c = counts + 8 * t;
        int64_t symbols = 0, bytes = 0;
        for (int len = 1; len <= 8; ++len) {
            symbols += c[len - 1];
            bytes += int64_t{len} * c[len - 1];
        }
        const int64_t start = starts[t];
        ok[t] = 0;
        if (symbols > 255 || start < 0 || start > size || bytes > size - start) continue;
        const uint8_t* p = data + start;
        int64_t at = out;
        bool ordered = true;
        for (int len = 1; len <= 8 && ordered; ++len) {
            uint64_t before = 0;
            for (int k = 0; k < c[len - 1]; ++k, p += len) {
                uint64_t slot = 0, key = 0;
                for (int b = 0; b < len; ++b) {
                    slot |= uint64_t{p[b]} << (8 * b);
                    key = (key << 8) | p[b];
                }
                key <<= 8 * (8 - len);  // (big-endian over the zero-padded slot)
                if (k && key <= before) {
                    ordered = false;
                    break;
                }
                before = key;
                packed[at] = slot;
                lengths[at] = static_cast<uint8_t>(len);
                ++at;
            }
        }
        if (ordered) {
            ok[t] = 1;
            out = at;
        }
    }
    return out;
}

}  // namespace fsstgpu_native
