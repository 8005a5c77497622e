#include "kernels.h"

namespace fsstgpu_native {

const Kernels& kernels(Isa isa) {
    switch (isa) {
        case Isa::avx512: return avx512::table;
        case Isa::avx2: return avx2::table;
        default: return scalar::table;
    }
}

namespace {

// The automaton as classes of bytes and a transition table (Hoehrmann's, states numbered
// 0-8), turned into one 64-bit row per byte at start-up.
uint64_t dfa_rows[256];

bool build_dfa() {
    static const struct { int lo, hi, cls; } ranges[] = {
        {0x80, 0x8F, 1}, {0x90, 0x9F, 9}, {0xA0, 0xBF, 7}, {0xC0, 0xC1, 8}, {0xC2, 0xDF, 2},
        {0xE0, 0xE0, 10}, {0xE1, 0xEC, 3}, {0xED, 0xED, 4}, {0xEE, 0xEF, 3}, {0xF0, 0xF0, 11},
        {0xF1, 0xF3, 6}, {0xF4, 0xF4, 5}, {0xF5, 0xFF, 8}};
    static const int next[9][12] = {
        {0, 1, 2, 3, 5, 8, 7, 1, 1, 1, 4, 6}, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
        {1, 0, 1, 1, 1, 1, 1, 0, 1, 0, 1, 1}, {1, 2, 1, 1, 1, 1, 1, 2, 1, 2, 1, 1},
        {1, 1, 1, 1, 1, 1, 1, 2, 1, 1, 1, 1}, {1, 2, 1, 1, 1, 1, 1, 1, 1, 2, 1, 1},
        {1, 1, 1, 1, 1, 1, 1, 3, 1, 3, 1, 1}, {1, 3, 1, 1, 1, 1, 1, 3, 1, 3, 1, 1},
        {1, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}};
    int cls[256] = {};
    for (const auto& r : ranges) {
        for (int b = r.lo; b <= r.hi; ++b) cls[b] = r.cls;
    }
    for (int b = 0; b < 256; ++b) {
        uint64_t row = 0;
        for (int s = 0; s < 9; ++s) row |= uint64_t(6 * next[s][cls[b]]) << (6 * s);
        dfa_rows[b] = row;
    }
    return true;
}

}  // namespace

const uint64_t* utf8_dfa() {
    static const bool ready = build_dfa();  // once, thread-safe (C++11 static init)
    (void)ready;
    return dfa_rows;
}

}  // namespace fsstgpu_native
