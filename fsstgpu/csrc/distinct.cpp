// distinct_upto (distinct.h): the strings' 64-bit hashes in an open-addressing set sized for
// limit + 1 of them, the walk stopped at the first hash past the limit.
#include "distinct.h"

#include <cstring>
#include <stdexcept>
#include <vector>

namespace fsstgpu_native {
namespace {

uint64_t mix(uint64_t h) {  // a 64-bit finaliser: every input bit moves every output bit
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

uint64_t hash_bytes(const uint8_t* p, int64_t len) {
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ static_cast<uint64_t>(len);
    int64_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        std::memcpy(&w, p + i, 8);
        h = (h ^ mix(w)) * 0x100000001b3ULL;
    }
    uint64_t tail = 0;
    if (len > i) std::memcpy(&tail, p + i, static_cast<size_t>(len - i));
    return mix(h ^ mix(tail ^ 0x2545f4914f6cdd1dULL));
}

}  // namespace

int64_t distinct_upto(const uint8_t* data, int64_t size, const int64_t* offsets, int64_t n,
                      const uint8_t* validity, int64_t limit) {
    if (n < 0) throw std::invalid_argument("distinct_upto: negative count");
    if (limit < 0) throw std::invalid_argument("distinct_upto: negative limit");
    if (n == 0) return 0;
    if (offsets[0] < 0 || offsets[0] > size) {
        throw std::invalid_argument("distinct_upto: offsets run outside the data");
    }
    const int64_t wanted = (limit < n ? limit : n) + 1;  // at most this many kept
    int64_t capacity = 16;
    while (capacity < 2 * wanted) capacity <<= 1;
    std::vector<uint64_t> slots(static_cast<size_t>(capacity), 0);  // 0: empty
    const uint64_t mask = static_cast<uint64_t>(capacity - 1);
    int64_t count = 0;
    // Strings go in groups: every hash of a group is computed and its slot prefetched before
    // the first is inserted, so the slots' cache misses (the set outgrows the caches from a
    // few hundred thousand strings) overlap instead of following one another. The inserts, the
    // count and where it stops are those of one string at a time; a bad offset is raised
    // only when the walk reaches it, as it was.
    constexpr int kGroup = 16;
    uint64_t hashes[kGroup];
    for (int64_t first = 0; first < n; first += kGroup) {
        const int64_t last = first + kGroup < n ? first + kGroup : n;
        const char* bad = nullptr;
        int held = 0;
        for (int64_t i = first; i < last; ++i) {
            const int64_t begin = offsets[i], stop = offsets[i + 1];
            if (stop < begin) bad = "distinct_upto: offsets decrease";
            else if (stop > size) bad = "distinct_upto: offsets run outside the data";
            if (bad != nullptr) break;  // (the strings before it are inserted first)
            if (validity != nullptr && !((validity[i >> 3] >> (i & 7)) & 1)) continue;
            uint64_t h = hash_bytes(data + begin, stop - begin);
            h += (h == 0);  // 0 marks an empty slot
            __builtin_prefetch(&slots[h & mask]);
            hashes[held++] = h;
        }
        for (int k = 0; k < held; ++k) {
            const uint64_t h = hashes[k];
            uint64_t at = h & mask;
            while (slots[at] != 0 && slots[at] != h) at = (at + 1) & mask;
            if (slots[at] == 0) {
                slots[at] = h;
                if (++count > limit) return limit + 1;
            }
        }
        if (bad != nullptr) throw std::invalid_argument(bad);
    }
    return count;
}

}  // namespace fsstgpu_native
