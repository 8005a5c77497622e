// Serialised symbol tables' symbols laid into 8-byte slots, many tables at once
// (table_slots.cpp; bound by bind_tables.cpp, used by fsstgpu.native.tables.read_tables).
#pragma once

#include <cstdint>

namespace fsstgpu_native {

// Table t's symbols: counts[8 t + L - 1] of length L (1-8), end to end from data[starts[t]],
// shortest first. Each is written into packed[] (its bytes in the low bytes of a little-endian
// uint64, zero after) and lengths[], table after table; ok[t] is 1 where they lie inside the
// size bytes of data, number at most 255 and each length's symbols strictly increase read
// big-endian (the canonical order; so they are distinct), else 0 and none of its symbols are
// written. packed / lengths hold room for every table's count. Returns the symbols written.
int64_t symbol_slots(const uint8_t* data, int64_t size, const int64_t* starts,
                     const uint8_t* counts, int64_t ntables, uint64_t* packed,
                     uint8_t* lengths, uint8_t* ok);

}  // namespace fsstgpu_native
