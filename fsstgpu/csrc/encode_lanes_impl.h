// The lane encoders, part of kernels_impl.h (included inside its per-instruction-set
// namespace, after load64/slot/load_word; see that file for the rules every copy follows).
//
// Greedy matching cannot be cut inside a string (it does not resynchronise), so the
// parallelism is across strings: the strings of a call are cut into groups of about equal
// bytes, one per lane, and each lane encodes its group, string after string, into its own
// worst-case region of the output (2 bytes per input byte, 8 apart). The lanes are
// independent dependency chains, so their loads overlap; the regions are then moved down in
// order and the code offsets of the moved strings shifted. 3 lanes run in plain registers (the
// AVX-512 copy has a vector kernel besides: encode_jobs_impl.h).
//
// One step of a lane, branch-free, with rem = bytes left in the string (>= 1) and word the
// next 8 bytes (bytes past the string are whatever follows it; they never decide anything):
//   the slot's one long symbol matches when its length <= rem and its bytes equal word's;
//   else the 2-byte table's entry (the 2-byte symbol, else the first byte's); when rem == 1,
//   the entry of the byte and single_hi (the byte's own). This is encode_chained's choice for tables without chains: a long
//   symbol can only match where its 2-byte prefix carries kLongFlag.
// The code byte and the literal are both stored; the output steps over the literal only
// after an escape. Strings that end within 7 bytes of the data's end (whose 8-byte loads
// would run past it) are left to encode_chained's careful loads.

struct Lane {
    int64_t pos, end;  // input position, end of the current string
    int64_t out;       // output position
    int64_t s, last;   // the current string; the group ends before string last
};

FSSTGPU_TARGET inline void lane_step(Lane& L, const uint8_t* data, const Matcher& m,
                                     const LaneTable& t, uint8_t* codes) {
    const int64_t rem = L.end - L.pos;
    const uint64_t word = load64(data + L.pos);
    const int e = t.slot_entry[slot(word)];
    const int32_t lcl = t.entry_cl[e];
    // selects by masks: as branches (what the compiler makes of ?:) they mispredict on about
    // every third code
    const int32_t hit = -static_cast<int32_t>(((word & t.entry[e].mask) == t.entry[e].key) &
                                              (((lcl >> 8) & 0xF) <= rem));
    // the last byte of a string: its byte_code entry, at single_hi
    const uint64_t two = uint64_t(0) - static_cast<uint64_t>(rem >= 2);
    const int32_t scl =
        m.short_code[(word & 0xFFFF & two) | (((word & 0xFF) | m.single_hi) & ~two)];
    const int32_t cl = (lcl & hit) | (scl & ~hit);
    const int c = cl & 0xFF;
    codes[L.out] = static_cast<uint8_t>(c);
    codes[L.out + 1] = static_cast<uint8_t>(word);
    L.out += 1 + (c == kEscape);
    L.pos += (cl >> 8) & 0xF;
}

// Move lane L to the next non-empty string of its group (recording the start of every string
// passed); false once the group is done. Strings are contiguous: the next starts at L.end.
FSSTGPU_TARGET inline bool lane_next(Lane& L, const int64_t* offsets, int64_t* code_offsets) {
    while (L.pos == L.end) {
        if (++L.s == L.last) return false;
        code_offsets[L.s] = L.out;
        L.end = offsets[L.s + 1];
    }
    return true;
}

FSSTGPU_TARGET inline void lane_finish(Lane& L, const uint8_t* data, const int64_t* offsets,
                                       const Matcher& m, const LaneTable& t, uint8_t* codes,
                                       int64_t* code_offsets) {
    while (lane_next(L, offsets, code_offsets)) {
        while (L.pos < L.end) lane_step(L, data, m, t, codes);
    }
}

#ifndef FSSTGPU_SCALAR_LANES
#define FSSTGPU_SCALAR_LANES 3
#endif
constexpr int kScalarLanes = FSSTGPU_SCALAR_LANES;

// A lane as the interleaved loop keeps it: the string switch without a branch (a string
// ends every 3-14 codes on dbtext; as a branch it mispredicts once a string).
struct FastLane {
    int64_t pos, end, out;
    int64_t s;       // the current string
    int64_t start;   // its start in the codes (stored on every step: no branch)
    int64_t gend;    // the group's end in data
};

FSSTGPU_TARGET inline void fast_switch(FastLane& L, const int64_t* offsets,
                                       int64_t* code_offsets) {
    // pos < gend: when the string is done, the next one (s + 1 < last) exists
    const int64_t done = L.pos == L.end;
    L.s += done;
    L.end = offsets[L.s + 1];  // the current string's end when not done
    const int64_t keep = done - 1;  // all ones when not done
    L.start = (L.start & keep) | (L.out & ~keep);
    code_offsets[L.s] = L.start;
}

FSSTGPU_TARGET inline void fast_step(FastLane& F, const uint8_t* data, const Matcher& m,
                                     const LaneTable& t, uint8_t* codes) {
    Lane L{F.pos, F.end, F.out, 0, 0};
    lane_step(L, data, m, t, codes);
    F.pos = L.pos;
    F.out = L.out;
}

FSSTGPU_TARGET inline void run_lanes_scalar(Lane* lanes, int nlanes, const uint8_t* data,
                                     const int64_t* offsets, const Matcher& m,
                                     const LaneTable& t, uint8_t* codes,
                                     int64_t* code_offsets) {
    if (nlanes == kScalarLanes) {
        // each lane on its first non-empty string
        bool ready = true;
#pragma GCC unroll 8
        for (int k = 0; k < kScalarLanes; ++k) ready &= lane_next(lanes[k], offsets, code_offsets);
        if (ready) {
            FastLane F[kScalarLanes];
#pragma GCC unroll 8
            for (int k = 0; k < kScalarLanes; ++k) {
                const Lane& L = lanes[k];
                F[k] = FastLane{L.pos, L.end, L.out, L.s, code_offsets[L.s], offsets[L.last]};
            }
            for (;;) {
                bool stop = false;
#pragma GCC unroll 8
                for (int k = 0; k < kScalarLanes; ++k) {
                    stop |= F[k].pos == F[k].gend;
                }
                if (stop) break;  // a group done (or only empty strings left in it)
#pragma GCC unroll 8
                for (int k = 0; k < kScalarLanes; ++k) fast_switch(F[k], offsets, code_offsets);
#pragma GCC unroll 8
                for (int k = 0; k < kScalarLanes; ++k) stop |= F[k].pos == F[k].end;
                if (stop) {  // an empty string: the careful switch
                    stop = false;
#pragma GCC unroll 8
                    for (int k = 0; k < kScalarLanes; ++k) {
                        if (F[k].pos < F[k].end) continue;
                        Lane L{F[k].pos, F[k].end, F[k].out, F[k].s, lanes[k].last};
                        const bool more = lane_next(L, offsets, code_offsets);
                        F[k].end = L.end;
                        F[k].s = L.s;
                        if (more) {
                            F[k].start = code_offsets[L.s];
                        } else {
                            stop = true;  // the group held only empty strings after this
                        }
                    }
                    if (stop) break;
                }
#pragma GCC unroll 8
                for (int k = 0; k < kScalarLanes; ++k) fast_step(F[k], data, m, t, codes);
            }
#pragma GCC unroll 8
            for (int k = 0; k < kScalarLanes; ++k) {
                lanes[k].pos = F[k].pos;
                lanes[k].end = F[k].end;
                lanes[k].out = F[k].out;
                lanes[k].s = F[k].s;
            }
        }
    }
    for (int k = 0; k < nlanes; ++k) {
        Lane& L = lanes[k];
        if (L.s < L.last) {
            while (L.pos < L.end) lane_step(L, data, m, t, codes);
            lane_finish(L, data, offsets, m, t, codes, code_offsets);
        }
    }
}

constexpr int64_t kMinLaneBytes = 2048;  // a group smaller than this is not worth a lane

// Strings lo:hi into codes from out0 (room: 2 bytes per input byte + kEncodeSlack); returns
// the end. Same codes and offsets as encode_chained for a table without chains.
FSSTGPU_TARGET int64_t encode_lanes(const uint8_t* data, int64_t size, const int64_t* offsets,
                                    int64_t lo, int64_t hi, const Matcher& m,
                                    const LaneTable& t, uint8_t* codes, int64_t out0,
                                    int64_t* code_offsets) {
    // the strings whose every 8-byte load stays inside data: those ending <= size - 7
    int64_t a = lo, b = hi;
    while (a < b) {
        const int64_t mid = a + (b - a) / 2;
        if (offsets[mid + 1] <= size - 7) a = mid + 1; else b = mid;
    }
    const int64_t fast = a;
    const int64_t span = offsets[fast] - offsets[lo];
    int64_t nl = span / kMinLaneBytes;
    if (nl > kScalarLanes) nl = kScalarLanes;
    if (nl > fast - lo) nl = fast - lo;
    if (nl < 1) nl = 1;
    Lane lanes[kMaxLanes];
    int64_t first = lo;
    for (int64_t k = 0; k < nl; ++k) {
        int64_t next = fast;
        if (k + 1 < nl) {  // the first string starting at or past the k+1-th share of bytes
            const int64_t target = offsets[lo] + span / nl * (k + 1);
            int64_t x = first, y = fast;
            while (x < y) {
                const int64_t mid = x + (y - x) / 2;
                if (offsets[mid] < target) x = mid + 1; else y = mid;
            }
            next = x;
        }
        Lane& L = lanes[k];
        L.pos = L.end = offsets[first];
        L.out = out0 + 2 * (offsets[first] - offsets[lo]) + 8 * k;
        L.s = first - 1;  // lane_next records the first string's start
        L.last = next;
        first = next;
    }
    int64_t region[kMaxLanes];
    for (int64_t k = 0; k < nl; ++k) region[k] = lanes[k].out;
    run_lanes_scalar(lanes, static_cast<int>(nl), data, offsets, m, t, codes, code_offsets);
    // the regions moved down in order (each starts at or past where it lands)
    int64_t out = lanes[0].out;
    int64_t s0 = lanes[0].last;
    for (int64_t k = 1; k < nl; ++k) {
        const int64_t n = lanes[k].out - region[k];
        const int64_t shift = region[k] - out;
        std::memmove(codes + out, codes + region[k], static_cast<size_t>(n));
        for (int64_t s = s0; s < lanes[k].last; ++s) code_offsets[s] -= shift;
        s0 = lanes[k].last;
        out += n;
    }
    if (fast < hi) out = encode_chained(data, size, offsets, fast, hi, m, codes, out,
                                        code_offsets);
    return out;
}
