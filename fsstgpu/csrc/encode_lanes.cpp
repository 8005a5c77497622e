#include "encode_lanes.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iterator>

namespace fsstgpu_native {

int encode_loop() {
    const char* want = std::getenv("FSSTGPU_ENCODER");
    if (want == nullptr) return kAuto;
    if (std::strcmp(want, "chained") == 0) return kChained;
    if (std::strcmp(want, "lanes") == 0) return kLanes;
    if (std::strcmp(want, "vector") == 0) return kVector;
    if (std::strcmp(want, "gather") == 0) return kGather;
    return kAuto;
}

bool build_lane_table(LaneTable& t, const Matcher& m) {
    std::fill(std::begin(t.key), std::end(t.key), uint64_t(1));
    std::fill(std::begin(t.vcl), std::end(t.vcl), uint64_t(64));
    std::fill(std::begin(t.slot_entry), std::end(t.slot_entry), uint8_t(0));
    t.entry[0] = LaneTable::Entry{1, 0};
    t.entry_cl[0] = 0;
    t.ventry[0] = LaneTable::VEntry{1, 64};
    int n = 0;
    for (int h = 0; h < kHashSize; ++h) {
        const int e = m.hhead[h];
        if (e < 0) continue;
        if (m.enext[e] >= 0) return false;
        const int len = (m.ecl[e] >> 8) & 0xFF;  // 3-8 (build_matcher checked)
        t.key[h] = m.ekey[e];
        t.vcl[h] = uint64_t(64 - 8 * len) | uint64_t(m.ecl[e] & 0xFF) << 8 | uint64_t(len) << 16;
        ++n;  // at most kMaxSymbols slots are used
        t.slot_entry[h] = static_cast<uint8_t>(n);
        t.entry[n] = LaneTable::Entry{
            m.ekey[e], len >= 8 ? ~uint64_t(0) : (uint64_t(1) << (8 * len)) - 1};
        t.entry_cl[n] = m.ecl[e];
        t.ventry[n] = LaneTable::VEntry{t.key[h], t.vcl[h]};
    }
    return true;
}

}  // namespace fsstgpu_native
