// The hot loops, one copy per instruction set (kernels_scalar.cpp, kernels_avx2.cpp,
// kernels_avx512.cpp compile kernels_impl.h each with their own target attributes), and the
// table that picks a copy at run time. Callers validate every offset and range first: the
// kernels trust their arguments and check only what the encoded data itself could get wrong.
#pragma once

#include <cstdint>

#include "cpu.h"
#include "encode_lanes.h"
#include "matcher.h"

namespace fsstgpu_native {

struct Kernels {
    // Encode strings lo:hi of data/offsets into codes from out0 (room for 2 bytes per input
    // byte, plus kEncodeSlack); code_offsets[i] gets string i's start. Returns the end in
    // codes. t: m's LaneTable (the lane kernels), or null where m chains (build_lane_table).
    // loop: an EncodeLoop; kAuto times them on the first strings and keeps the fastest.
    int64_t (*encode)(const uint8_t* data, int64_t size, const int64_t* offsets, int64_t lo,
                      int64_t hi, const Matcher& m, const LaneTable* t, int loop,
                      uint8_t* codes, int64_t out0, int64_t* code_offsets);
    // The first of strings lo:hi that is not valid UTF-8, or -1; offsets non-decreasing and
    // inside data. dfa is utf8_dfa().
    int64_t (*utf8_32)(const uint8_t* data, const int32_t* offsets, int64_t lo, int64_t hi,
                       const uint64_t* dfa);
    int64_t (*utf8_64)(const uint8_t* data, const int64_t* offsets, int64_t lo, int64_t hi,
                       const uint64_t* dfa);
    // out[i] = in[i] for i in [lo, hi), kept to the low `width` bytes (1, 2, 4 or 8; out is
    // that wide), and the bitwise OR of those in[i] as uint64: layout.h's narrow_lengths.
    uint64_t (*narrow)(const int64_t* in, int64_t lo, int64_t hi, void* out, int width);
};

const Kernels& kernels(Isa isa);

// Hoehrmann's UTF-8 automaton in shift form: (dfa[byte] >> state) & 63 is the next state,
// states are multiples of 6, 0 = between characters, 6 = rejected for good.
const uint64_t* utf8_dfa();

namespace scalar { extern const Kernels table; }
namespace avx2 { extern const Kernels table; }
namespace avx512 { extern const Kernels table; }

}  // namespace fsstgpu_native
