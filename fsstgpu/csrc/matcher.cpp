// Matcher construction: symbols longest first
// (ties in code order), so hash chains list longer symbols first and the first match is the
// longest one.
#include "matcher.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

namespace fsstgpu_native {

void check_symbols(const uint64_t* packed, const uint8_t* lengths, int64_t n) {
    if (n < 0 || n > kMaxSymbols) {
        throw std::invalid_argument("a symbol table holds 0-255 symbols, not " +
                                    std::to_string(n));
    }
    for (int64_t i = 0; i < n; ++i) {
        if (lengths[i] < 1 || lengths[i] > 8) {
            throw std::invalid_argument("symbol " + std::to_string(i) + " has length " +
                                        std::to_string(lengths[i]) + ", not 1-8");
        }
        // bytes past the length would never match the masked input word
        if (lengths[i] < 8 && (packed[i] >> (8 * lengths[i])) != 0) {
            throw std::invalid_argument("symbol " + std::to_string(i) +
                                        " has bytes past its length");
        }
    }
}

void build_matcher(Matcher& m, const uint64_t* packed, const uint8_t* lengths, int64_t n) {
    check_symbols(packed, lengths, n);
    m.nsymbols = static_cast<int>(n);
    std::vector<int> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return lengths[a] > lengths[b]; });
    for (int c = 0; c < 256; ++c) m.byte_code[c] = kEscape | (1 << 8);
    for (int i : order) {
        if (lengths[i] == 1) m.byte_code[packed[i] & 0xFF] = static_cast<uint16_t>(i | (1 << 8));
    }
    // short_code[w] = byte_code[w & 0xFF]: 256 copies of byte_code, by doubling
    std::memcpy(m.short_code, m.byte_code, sizeof(m.byte_code));
    for (size_t have = 256; have < 65536; have *= 2) {
        std::memcpy(m.short_code + have, m.short_code, have * sizeof(uint16_t));
    }
    std::fill(m.short_code + 65536, std::end(m.short_code), uint16_t(0));
    bool second[256] = {};
    for (int i : order) {
        if (lengths[i] == 2) {
            m.short_code[packed[i] & 0xFFFF] = static_cast<uint16_t>(i | (2 << 8));
            second[(packed[i] >> 8) & 0xFF] = true;
        }
    }
    int x = 0;
    while (x < 255 && second[x]) ++x;  // stops before 255: at most 255 symbols
    m.single_hi = uint64_t(x) << 8;
    std::fill(std::begin(m.hhead), std::end(m.hhead), -1);
    int tail[kHashSize];
    int e = 0;
    for (int i : order) {
        if (lengths[i] < 3) continue;
        int64_t h = hash3(packed[i]);
        m.ekey[e] = packed[i];
        m.ecl[e] = i | (lengths[i] << 8);
        m.enext[e] = -1;
        if (m.hhead[h] < 0) {
            m.hhead[h] = e;
        } else {
            m.enext[tail[h]] = e;
        }
        tail[h] = e;
        m.short_code[packed[i] & 0xFFFF] |= kLongFlag;
        ++e;
    }
}

}  // namespace fsstgpu_native
