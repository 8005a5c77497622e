// Which instruction set the kernels run with: chosen at run time, so one build runs everywhere.
#pragma once

namespace fsstgpu_native {

enum class Isa : int { scalar = 0, avx2 = 1, avx512 = 2 };

const char* isa_name(Isa isa);

// The best set this CPU supports (AVX-512 needs F, BW, VL and DQ; AVX2 also BMI1/2).
Isa best_isa();

// best_isa(), lowered to FSSTGPU_ISA (scalar, avx2 or avx512) when that names a lower one:
// tests run every path the machine has, and a user can step around a suspect one.
Isa active_isa();

// Whether AVX-512 gathers are cheap here (an Intel CPU: the H200 host's Xeon encoded dbtext at
// 150 MB/s with the job kernel's gathers, 103 with its scalar loads; an AMD Zen 4, whose
// gathers issue for ~15 cycles each, the other way round: 13-50% faster with scalar loads).
bool fast_gathers();

}  // namespace fsstgpu_native
