// A 32 x 32 bit matrix transposed across the lanes of a warp, used by bitplane.cu to turn 32
// values into their bit planes and back (the planes of several narrow groups share one
// transpose there).  Needs FULL (all lanes) and uint32_t from the including file.
#pragma once

// 32 x 32 bit matrix across a warp: lane r holds row r (bit k = element (r, k)); returns column
// `lane` (bit r = element (r, lane)).  Five butterfly stages, each swapping the off-diagonal
// blocks of size j: ~5 instructions a stage for 32 words, where bit-by-bit ballots or shared
// reads cost ~6 instructions per plane per group (the profile's 19-32 instructions a byte).
template <int J, unsigned M>
__device__ __forceinline__ uint32_t transpose_stage(uint32_t x, int lane) {
    const uint32_t y = __shfl_xor_sync(FULL, x, J);
    const bool hi = lane & J;
    const uint32_t keep = hi ? ~M : M;
    return (x & keep) | ((hi ? y >> J : y << J) & ~keep);
}
// (The stages are spelled out: written as a loop over j = 16, 8, .. 1, nvcc kept the loop and
// picked each mask through a branch tree, ~20 instructions a stage in the profile.)
__device__ __forceinline__ uint32_t warp_transpose32(uint32_t x, int lane) {
    x = transpose_stage<16, 0x0000ffffu>(x, lane);
    x = transpose_stage<8, 0x00ff00ffu>(x, lane);
    x = transpose_stage<4, 0x0f0f0f0fu>(x, lane);
    x = transpose_stage<2, 0x33333333u>(x, lane);
    return transpose_stage<1, 0x55555555u>(x, lane);
}
