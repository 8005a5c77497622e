// zlib's CRC-32 (the polynomial 0xEDB88320, bit-reflected, the register inverted before and
// after): the number zlib.crc32 gives, for the containers' and Parquet pages' checks.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fsstgpu_native {

// zlib.crc32(data[0:n], value): carry-less multiplication folding 64 bytes a step where the CPU
// has PCLMULQDQ (and `clmul` is true), else 8 table lookups a step (slicing by 8).
uint32_t crc32(uint32_t value, const uint8_t* data, size_t n, bool clmul);

// Whether this CPU has PCLMULQDQ and SSE4.1 (the folding path).
bool crc32_has_clmul();

}  // namespace fsstgpu_native
