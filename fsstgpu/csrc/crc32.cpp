// CRC-32 as zlib computes it, at memory speed: zlib 1.2.13's crc32 runs ~3.9 GB/s on one core
// (the VM), the pages' CRCs were a third of a Parquet column's planning (issue #24 item 2).
//
// Folding (Intel's "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ", the method
// zlib-ng and Linux use): four 128-bit lanes of the message, each multiplied carry-lessly by
// x^(512) mod P (split in two 64-bit halves) and added to the next 64 bytes, keep a 512-bit
// value whose CRC is the CRC of the bytes folded so far; the four are folded into one, then
// that 16-byte value and the tail run through the table (the register starting at 0), which
// stands in for the Barrett reduction. The constants are Linux's crc32-pclmul_asm.S' for this
// polynomial (x^(4*128+32) and x^(4*128-32) mod P, reflected; x^(128+32), x^(128-32)).
#include "crc32.h"

#include <array>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace fsstgpu_native {

namespace {

constexpr uint32_t kPoly = 0xEDB88320u;

// tables[k][b]: the register after byte b followed by k zero bytes (slicing by 8)
struct Tables {
    std::array<std::array<uint32_t, 256>, 8> t{};
    Tables() {
        for (uint32_t b = 0; b < 256; ++b) {
            uint32_t c = b;
            for (int i = 0; i < 8; ++i) c = (c >> 1) ^ (kPoly & (0u - (c & 1u)));
            t[0][b] = c;
        }
        for (uint32_t b = 0; b < 256; ++b) {
            for (int k = 1; k < 8; ++k) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xFF];
        }
    }
};

const Tables& tables() {
    static const Tables made;
    return made;
}

// the register (not inverted) after data[0:n]
uint32_t by_table(uint32_t reg, const uint8_t* p, size_t n) {
    const auto& t = tables().t;
    while (n >= 8) {
        // little-endian words assembled bytewise: no alignment or byte-order assumption
        const uint32_t lo = reg ^ (uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 |
                                   uint32_t(p[3]) << 24);
        reg = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^
              t[4][lo >> 24] ^ t[3][p[4]] ^ t[2][p[5]] ^ t[1][p[6]] ^ t[0][p[7]];
        p += 8;
        n -= 8;
    }
    while (n--) reg = (reg >> 8) ^ t[0][(reg ^ *p++) & 0xFF];
    return reg;
}

#if defined(__x86_64__) || defined(__i386__)
#define FSSTGPU_CLMUL __attribute__((target("pclmul,sse4.1")))

// x folded over 128 bits (by the constants' distance) and added to next
FSSTGPU_CLMUL inline __m128i fold(__m128i x, __m128i k, __m128i next) {
    const __m128i lo = _mm_clmulepi64_si128(x, k, 0x00);
    const __m128i hi = _mm_clmulepi64_si128(x, k, 0x11);
    return _mm_xor_si128(_mm_xor_si128(lo, hi), next);
}

FSSTGPU_CLMUL inline __m128i load(const uint8_t* p) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

// the register after data[0:n], n >= 64
FSSTGPU_CLMUL uint32_t by_folding(uint32_t reg, const uint8_t* p, size_t n) {
    const __m128i by4 = _mm_set_epi64x(0x1c6e41596LL, 0x154442bd4LL);
    const __m128i by1 = _mm_set_epi64x(0x0ccaa009eLL, 0x1751997d0LL);
    // (the register enters as the message's first four bytes added to it)
    __m128i x0 = _mm_xor_si128(load(p), _mm_cvtsi32_si128(static_cast<int>(reg)));
    __m128i x1 = load(p + 16), x2 = load(p + 32), x3 = load(p + 48);
    p += 64;
    n -= 64;
    while (n >= 64) {
        x0 = fold(x0, by4, load(p));
        x1 = fold(x1, by4, load(p + 16));
        x2 = fold(x2, by4, load(p + 32));
        x3 = fold(x3, by4, load(p + 48));
        p += 64;
        n -= 64;
    }
    x0 = fold(fold(fold(x0, by1, x1), by1, x2), by1, x3);
    while (n >= 16) {
        x0 = fold(x0, by1, load(p));
        p += 16;
        n -= 16;
    }
    alignas(16) uint8_t rest[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(rest), x0);
    return by_table(by_table(0, rest, 16), p, n);
}
#endif

}  // namespace

bool crc32_has_clmul() {
#if defined(__x86_64__) || defined(__i386__)
    static const bool has = [] {
        __builtin_cpu_init();
        return __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
    }();
    return has;
#else
    return false;
#endif
}

uint32_t crc32(uint32_t value, const uint8_t* data, size_t n, bool clmul) {
    uint32_t reg = ~value;
#if defined(__x86_64__) || defined(__i386__)
    if (clmul && n >= 64 && crc32_has_clmul()) return ~by_folding(reg, data, n);
#else
    (void)clmul;
#endif
    return ~by_table(reg, data, n);
}

}  // namespace fsstgpu_native
