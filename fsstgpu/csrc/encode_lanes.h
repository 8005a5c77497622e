// The encoder's second lookup structure, derived from a Matcher: one candidate per hash slot,
// laid out so that a lookup is one load per field and never a chain walk (the reference
// FSST's layout). Trained tables admit a 3-8 byte symbol only when its slot is free
// (fsstgpu/training.py), so every trained table has one; hand-made tables whose slots chain
// several symbols have none and keep the Matcher's chain walk.
#pragma once

#include <cstdint>

#include "matcher.h"

namespace fsstgpu_native {

// Bytes an encode kernel may write past 2 bytes per input byte: the lane kernels give each of
// up to kMaxLanes groups of strings its own worst-case region, 8 bytes apart (the job kernel's
// copies write up to 31 bytes past the codes).
constexpr int kMaxLanes = 32;
constexpr int64_t kEncodeSlack = 8 * (kMaxLanes + 2);

struct LaneTable {
    // For the AVX-512 job kernel (one gather per field):
    uint64_t key[kHashSize];  // the slot's 3-8 byte symbol (zero-padded); 1 for none
    // its 64 - 8 * length | code << 8 | length << 16; 64 (a mask of no bytes) for none
    uint64_t vcl[kHashSize];
    // For the scalar kernels, small enough to stay in L1 (the slot-wide arrays miss it):
    uint8_t slot_entry[kHashSize];  // the slot's entry below, 0 for none
    struct Entry {
        uint64_t key;   // entry 0: 1, never equal to word & 0
        uint64_t mask;  // the low bytes of its length; entry 0: 0
    } entry[kMaxSymbols + 1];
    int32_t entry_cl[kMaxSymbols + 1];  // code | length << 8; entry 0: 0
    struct VEntry {
        uint64_t key, vcl;  // key and vcl of the entry's slot; entry 0: 1 and 64
    } ventry[kMaxSymbols + 1];
};

// The encoder's loops (all give the same codes): FSSTGPU_ENCODER=chained|lanes|vector|gather
// picks one for tests and measurements (vector: the AVX-512 job kernel, encode_jobs_impl.h,
// loading with scalar loads; gather: the same with gathers; both are lanes in the other
// copies), else kAuto.
enum EncodeLoop : int { kChained = 0, kLanes = 1, kVector = 2, kAuto = 3, kGather = 4 };
int encode_loop();

// Fill t from m; false (t unusable) when a slot holds more than one symbol.
bool build_lane_table(LaneTable& t, const Matcher& m);

}  // namespace fsstgpu_native
