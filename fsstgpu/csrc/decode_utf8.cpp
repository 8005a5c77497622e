// decode_utf8.h: the lookup UTF-8 check, compiled for AVX2 and for AVX-512 BW with target
// attributes (the build has no -march flags) and used only where cpu.h says they run.
#include "decode_utf8.h"

#include <cstring>

#include "cpu.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define FSSTGPU_UTF8_SIMD 1
#endif

namespace fsstgpu_native {

#ifdef FSSTGPU_UTF8_SIMD

namespace {

#define AVX2 __attribute__((target("avx2")))

// The error classes of a byte pair (the paper's table 9): a pair is an error exactly when the
// three lookups share a bit, except the two-continuations bit, which must be set exactly where
// a third or fourth byte of a character stands.
constexpr uint8_t kTooShort = 1 << 0;   // 11______ 0_______ or 11______ 11______
constexpr uint8_t kTooLong = 1 << 1;    // 0_______ 10______
constexpr uint8_t kOverlong3 = 1 << 2;  // 11100000 100_____
constexpr uint8_t kTooLarge = 1 << 3;   // 11110100 1001____, 11110100 101_____, 111101__ 10______..
constexpr uint8_t kSurrogate = 1 << 4;  // 11101101 101_____
constexpr uint8_t kOverlong2 = 1 << 5;  // 1100000_ 10______
constexpr uint8_t kTooLarge1000 = 1 << 6;  // 11110101 1000____ and above
constexpr uint8_t kOverlong4 = 1 << 6;     // 11110000 1000____
constexpr uint8_t kTwoConts = 1 << 7;      // 10______ 10______
constexpr uint8_t kCarry = kTooShort | kTooLong | kTwoConts;

AVX2 inline __m256i table16(uint8_t a0, uint8_t a1, uint8_t a2, uint8_t a3, uint8_t a4,
                            uint8_t a5, uint8_t a6, uint8_t a7, uint8_t a8, uint8_t a9,
                            uint8_t a10, uint8_t a11, uint8_t a12, uint8_t a13, uint8_t a14,
                            uint8_t a15) {
    return _mm256_setr_epi8(
        char(a0), char(a1), char(a2), char(a3), char(a4), char(a5), char(a6), char(a7),
        char(a8), char(a9), char(a10), char(a11), char(a12), char(a13), char(a14), char(a15),
        char(a0), char(a1), char(a2), char(a3), char(a4), char(a5), char(a6), char(a7),
        char(a8), char(a9), char(a10), char(a11), char(a12), char(a13), char(a14), char(a15));
}

// input shifted by n bytes, the first n from the end of prev
template <int N>
AVX2 inline __m256i prev_bytes(__m256i input, __m256i prev) {
    return _mm256_alignr_epi8(input, _mm256_permute2x128_si256(prev, input, 0x21), 16 - N);
}

AVX2 inline __m256i high_nibble(__m256i v) {
    return _mm256_and_si256(_mm256_srli_epi16(v, 4), _mm256_set1_epi8(0x0F));
}

// The three lookups of the paper's method: by the previous byte's high and low nibbles, and by
// this byte's high nibble.
AVX2 inline __m256i byte_1_high_table() {
    return table16(kTooLong, kTooLong, kTooLong, kTooLong, kTooLong, kTooLong, kTooLong, kTooLong,
                   kTwoConts, kTwoConts, kTwoConts, kTwoConts, kTooShort | kOverlong2, kTooShort,
                   kTooShort | kOverlong3 | kSurrogate,
                   kTooShort | kTooLarge | kTooLarge1000 | kOverlong4);
}
AVX2 inline __m256i byte_1_low_table() {
    return table16(kCarry | kOverlong3 | kOverlong2 | kOverlong4, kCarry | kOverlong2, kCarry,
                   kCarry, kCarry | kTooLarge, kCarry | kTooLarge | kTooLarge1000,
                   kCarry | kTooLarge | kTooLarge1000, kCarry | kTooLarge | kTooLarge1000,
                   kCarry | kTooLarge | kTooLarge1000, kCarry | kTooLarge | kTooLarge1000,
                   kCarry | kTooLarge | kTooLarge1000, kCarry | kTooLarge | kTooLarge1000,
                   kCarry | kTooLarge | kTooLarge1000,
                   kCarry | kTooLarge | kTooLarge1000 | kSurrogate,
                   kCarry | kTooLarge | kTooLarge1000, kCarry | kTooLarge | kTooLarge1000);
}
AVX2 inline __m256i byte_2_high_table() {
    return table16(kTooShort, kTooShort, kTooShort, kTooShort, kTooShort, kTooShort, kTooShort,
                   kTooShort,
                   kTooLong | kOverlong2 | kTwoConts | kOverlong3 | kTooLarge1000 | kOverlong4,
                   kTooLong | kOverlong2 | kTwoConts | kOverlong3 | kTooLarge,
                   kTooLong | kOverlong2 | kTwoConts | kSurrogate | kTooLarge,
                   kTooLong | kOverlong2 | kTwoConts | kSurrogate | kTooLarge, kTooShort,
                   kTooShort, kTooShort, kTooShort);
}

// The error bits of one block given the previous one.
AVX2 inline __m256i block_errors(__m256i input, __m256i prev) {
    const __m256i prev1 = prev_bytes<1>(input, prev);
    const __m256i byte_1_high = _mm256_shuffle_epi8(byte_1_high_table(), high_nibble(prev1));
    const __m256i byte_1_low = _mm256_shuffle_epi8(
        byte_1_low_table(), _mm256_and_si256(prev1, _mm256_set1_epi8(0x0F)));
    const __m256i byte_2_high = _mm256_shuffle_epi8(byte_2_high_table(), high_nibble(input));
    const __m256i special =
        _mm256_and_si256(_mm256_and_si256(byte_1_high, byte_1_low), byte_2_high);
    // a third byte (two after a lead 111_____) or fourth (three after 1111____) must be a
    // second continuation in a row: the kTwoConts bit, there and only there
    const __m256i third = _mm256_subs_epu8(prev_bytes<2>(input, prev), _mm256_set1_epi8(0x60));
    const __m256i fourth = _mm256_subs_epu8(prev_bytes<3>(input, prev), _mm256_set1_epi8(0x70));
    const __m256i must23 =
        _mm256_and_si256(_mm256_or_si256(third, fourth), _mm256_set1_epi8(char(0x80)));
    return _mm256_xor_si256(must23, special);
}

// Nonzero where a block's last bytes begin a character it does not finish.
AVX2 inline __m256i incomplete(__m256i input) {
    const __m256i max = _mm256_setr_epi8(
        -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
        -1, -1, -1, -1, -1, -1, -1, char(0xF0 - 1), char(0xE0 - 1), char(0xC0 - 1));
    return _mm256_subs_epu8(input, max);
}

AVX2 bool valid_avx2(const uint8_t* data, int64_t n, bool* high) {
    __m256i error = _mm256_setzero_si256();
    __m256i prev = _mm256_setzero_si256();
    __m256i prev_incomplete = _mm256_setzero_si256();
    bool any_high = false;
    int64_t i = 0;
    uint8_t last[32];
    for (;;) {
        __m256i input;
        if (i + 32 <= n) {
            input = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(data + i));
        } else if (i < n) {
            std::memset(last, 0, 32);  // ASCII padding: ends an unfinished character as one
            std::memcpy(last, data + i, static_cast<size_t>(n - i));
            input = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(last));
        } else {
            break;
        }
        if (_mm256_movemask_epi8(input) == 0) {
            error = _mm256_or_si256(error, prev_incomplete);
            prev_incomplete = _mm256_setzero_si256();
        } else {
            any_high = true;
            error = _mm256_or_si256(error, block_errors(input, prev));
            prev_incomplete = incomplete(input);
        }
        prev = input;
        i += 32;
        if ((i & 4095) == 0 && !_mm256_testz_si256(error, error)) break;  // no need to go on
    }
    error = _mm256_or_si256(error, prev_incomplete);  // the stream ends inside a character
    *high = *high || any_high;
    return _mm256_testz_si256(error, error);
}

// The same check 64 bytes a step (AVX-512 BW): the lookups per 128-bit lane as above; the
// bytes before each lane come from the lane below it, or from the previous block's last lane.
#define AVX512 __attribute__((target("avx512f,avx512bw")))

AVX512 inline __m512i wide(__m256i table) {  // table16's 16 bytes in all four lanes
    return _mm512_broadcast_i32x4(_mm256_castsi256_si128(table));
}

template <int N>
AVX512 inline __m512i prev_bytes512(__m512i input, __m512i prev) {
    // lane k: prev's last lane for k = 0, else input's lane k - 1 (qwords 8-15 are input's)
    const __m512i below =
        _mm512_permutex2var_epi64(prev, _mm512_setr_epi64(6, 7, 8, 9, 10, 11, 12, 13), input);
    return _mm512_alignr_epi8(input, below, 16 - N);
}

AVX512 inline __m512i high_nibble512(__m512i v) {
    return _mm512_and_si512(_mm512_srli_epi16(v, 4), _mm512_set1_epi8(0x0F));
}

// block_errors, 64 bytes
AVX512 inline __m512i block_errors512(__m512i input, __m512i prev, const __m512i* tables) {
    const __m512i prev1 = prev_bytes512<1>(input, prev);
    const __m512i byte_1_high = _mm512_shuffle_epi8(tables[0], high_nibble512(prev1));
    const __m512i byte_1_low =
        _mm512_shuffle_epi8(tables[1], _mm512_and_si512(prev1, _mm512_set1_epi8(0x0F)));
    const __m512i byte_2_high = _mm512_shuffle_epi8(tables[2], high_nibble512(input));
    const __m512i special =
        _mm512_and_si512(_mm512_and_si512(byte_1_high, byte_1_low), byte_2_high);
    const __m512i third =
        _mm512_subs_epu8(prev_bytes512<2>(input, prev), _mm512_set1_epi8(0x60));
    const __m512i fourth =
        _mm512_subs_epu8(prev_bytes512<3>(input, prev), _mm512_set1_epi8(0x70));
    const __m512i must23 =
        _mm512_and_si512(_mm512_or_si512(third, fourth), _mm512_set1_epi8(char(0x80)));
    return _mm512_xor_si512(must23, special);
}

AVX512 bool valid_avx512(const uint8_t* data, int64_t n, bool* high) {
    // block_errors' three tables, in every lane (taken from the AVX2 code's, so they agree)
    const __m512i tables[3] = {wide(byte_1_high_table()), wide(byte_1_low_table()),
                               wide(byte_2_high_table())};
    // incomplete(): the last three bytes of the block may begin an unfinished character
    alignas(64) static const uint8_t kMax[64] = {
        255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
        255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
        255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
        255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 0xF0 - 1, 0xE0 - 1,
        0xC0 - 1};
    const __m512i max = _mm512_load_si512(kMax);
    __m512i error = _mm512_setzero_si512();
    __m512i prev = _mm512_setzero_si512();
    __m512i prev_incomplete = _mm512_setzero_si512();
    bool any_high = false;
    for (int64_t i = 0; i < n; i += 64) {
        // the last block masked: zero (ASCII) padding ends an unfinished character as one
        const __m512i input =
            i + 64 <= n ? _mm512_loadu_si512(data + i)
                        : _mm512_maskz_loadu_epi8(~uint64_t(0) >> (64 - (n - i)), data + i);
        if (_mm512_movepi8_mask(input) == 0) {
            error = _mm512_or_si512(error, prev_incomplete);
            prev_incomplete = _mm512_setzero_si512();
        } else {
            any_high = true;
            error = _mm512_or_si512(error, block_errors512(input, prev, tables));
            prev_incomplete = _mm512_subs_epu8(input, max);
        }
        prev = input;
        if (((i + 64) & 4095) == 0 && _mm512_test_epi8_mask(error, error)) break;
    }
    error = _mm512_or_si512(error, prev_incomplete);  // the stream ends inside a character
    *high = *high || any_high;
    return _mm512_test_epi8_mask(error, error) == 0;
}

}  // namespace

bool has_simd_utf8() { return active_isa() >= Isa::avx2; }

bool stream_valid_simd(const uint8_t* data, int64_t n, bool* high, bool avx512) {
    return avx512 ? valid_avx512(data, n, high) : valid_avx2(data, n, high);
}

#else

bool has_simd_utf8() { return false; }
bool stream_valid_simd(const uint8_t*, int64_t, bool*, bool) { return false; }

#endif

}  // namespace fsstgpu_native
