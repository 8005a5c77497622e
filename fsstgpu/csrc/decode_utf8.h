// A SIMD check that bytes are one valid UTF-8 stream (RFC 3629: no overlong forms, surrogates
// or code points past U+10FFFF), for decode_all's fused check (decode.cpp): the lookup method
// of Keiser and Lemire ("Validating UTF-8 in less than one instruction per byte", 2021), 32
// bytes a step (64 with AVX-512). It only says whether a run of strings is valid; the
// per-string kernels (kernels.h utf8_32/utf8_64) name the first invalid string of a run it
// rejects.
#pragma once

#include <cstdint>

namespace fsstgpu_native {

// Whether this CPU runs stream_valid_simd (AVX2).
bool has_simd_utf8();

// Whether data[0:n] is valid UTF-8 as one stream; *high is set when a byte is >= 0x80.
// Only call when has_simd_utf8(); avx512 (only where active_isa() is avx512) takes 64 bytes
// a step instead of 32, same answer.
bool stream_valid_simd(const uint8_t* data, int64_t n, bool* high, bool avx512);

}  // namespace fsstgpu_native
