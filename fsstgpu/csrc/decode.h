// Decoding a whole column from its split points (fsstgpu.arrays' contract; fsstgpu/decoder.py's
// decode_all): check_column first (before the output is allocated), then decode_column. Both
// take the tables compacted (fsstgpu.decoder.compact_tables): table t's symbols are
// packed[first[t]:first[t + 1]], its lengths the 256 bytes lens[256 t:256 (t + 1)].
#pragma once

#include <cstdint>

namespace fsstgpu_native {

struct CompactTables {
    const uint64_t* packed;  // every symbol, table after table, then 255 zero words of padding
    int64_t npacked;
    const int64_t* first;  // ntables + 1 starts in packed
    const uint8_t* lens;   // ntables rows of 256 (0: no symbol)
    int64_t ntables;
};

struct Splits {
    const int64_t* codes;  // n + 1 code positions
    const int64_t* out;    // n + 1 output positions
    const int64_t* table;  // n table indices
    int64_t n;
};

// The strings' output offsets (n + 1, the Arrow offsets), when given: the walk checks that no
// symbol runs across a string end (check) and that code_offsets (n + 1, or null) are where the
// strings' codes start; utf8 asks for every string to be valid UTF-8 (checked split by split
// right after it is decoded, while its bytes are in the cache).
template <class Off>
struct StringEnds {
    const Off* ends;
    int64_t n;
    const int64_t* code_offsets;
    bool check;
    bool utf8;
};

// Throws CorruptData (the decoder.py messages) unless the splits, the string ends and the code
// offsets are consistent; std::invalid_argument for tables that are not compact_tables' form.
// ends may be null (no string ends); ncode_offsets < 0: none. The string ends are checked on
// `threads` (a 1 GiB column's 28 M ends took 15-20 ms on one).
// The split points' own invariants (one home: check_column runs it, and so does
// CompressedStringArray.validate through native.check_splits): nc / no entries of codes / out
// (n + 1 each), running non-decreasing from 0 to ncodes and to total_out, table indices in
// 0..nt - 1. Throws CorruptData naming the first broken one.
void check_splits(const Splits& splits, int64_t nsplit_codes, int64_t nsplit_out, int64_t ncodes,
                  int64_t total_out, int64_t ntables);
// The same with the table indices as a column holds them (uint16: no int64 copy of them first).
void check_splits(const int64_t* codes, const int64_t* out, const uint16_t* table, int64_t nsplits,
                  int64_t nsplit_codes, int64_t nsplit_out, int64_t ncodes, int64_t total_out,
                  int64_t ntables);

template <class Off>
void check_column(int64_t ncodes, const Splits& splits, int64_t nsplit_codes,
                  int64_t nsplit_out, const CompactTables& tables, int64_t total_out,
                  const Off* ends, int64_t nends, const int64_t* code_offsets,
                  int64_t ncode_offsets, int threads);

// Decodes into out[0:total_out]; throws CorruptData for a split that does not decode exactly
// into its range (or crosses a string end, or disagrees with a code offset). Returns the first
// string that is not valid UTF-8 (with ends->utf8), else -1. The same bytes and the same answer
// whatever the thread count.
template <class Off>
int64_t decode_column(const uint8_t* codes, const Splits& splits, const CompactTables& tables,
                      uint8_t* out, int64_t total_out, const StringEnds<Off>* ends, int threads);

}  // namespace fsstgpu_native
