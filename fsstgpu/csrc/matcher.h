// The FSST longest-match lookup tables of one symbol table, as the encoder kernels
// (kernels_impl.h) read them; the trainer (train.cpp) keeps a lighter copy of the same layout.
#pragma once

#include <cstdint>

namespace fsstgpu_native {

constexpr int kHashBits = 12;
constexpr int kHashSize = 1 << kHashBits;
constexpr uint64_t kHashPrime = 2971215073ull;
constexpr uint16_t kLongFlag = 1 << 15;  // a 2-byte entry whose bytes start a 3-8 byte symbol
constexpr int kEscape = 255;
constexpr int kMaxSymbols = 255;

// Entries are code | length << 8 (| kLongFlag in short_code): 16 bits, so the 2-byte table
// is 128 KB (it mostly lives in L2) and is built by a few copies. Plain data only: the kernels
// that read it are compiled once per instruction set and must share no library code.
struct Matcher {
    uint16_t byte_code[256];  // the 1-byte symbol of a byte, else an escape (length 1)
    // the 2-byte symbol of two bytes, else byte_code of the first; 4 zero entries past the
    // end (the vector kernel reads 8 bytes at an entry)
    uint16_t short_code[65536 + 4];
    int32_t hhead[kHashSize];  // first chain entry of a hash slot, -1 for none
    uint64_t ekey[256];        // 3-8 byte symbols, zero-padded little-endian
    int32_t ecl[256];          // their code | length << 8
    int32_t enext[256];        // next entry of the chain (always a later one), -1 at the end
    // A second byte no 2-byte symbol has (there are at most 255 of them), shifted up 8:
    // short_code[b | single_hi] is byte_code[b] (flags aside), so the last byte of a string
    // can be looked up in short_code too.
    uint64_t single_hi;
    int nsymbols;
};

inline int64_t hash3(uint64_t word) {
    uint64_t p = (word & 0xFFFFFFull) * kHashPrime;
    return static_cast<int64_t>((p ^ (p >> 15)) & (kHashSize - 1));
}

// Throws std::invalid_argument unless 0 <= n <= 255 and each symbol packed[i] (zero-padded
// bytes) has a length lengths[i] of 1-8 and no bytes beyond it.
void check_symbols(const uint64_t* packed, const uint8_t* lengths, int64_t n);

// Fill m for symbols packed[i] of lengths[i], code i each, once check_symbols passes (it runs
// first and throws as it does).
void build_matcher(Matcher& m, const uint64_t* packed, const uint8_t* lengths, int64_t n);

}  // namespace fsstgpu_native
