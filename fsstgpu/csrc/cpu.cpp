#include "cpu.h"

#include <cstdlib>
#include <cstring>

namespace fsstgpu_native {

const char* isa_name(Isa isa) {
    switch (isa) {
        case Isa::avx512: return "avx512";
        case Isa::avx2: return "avx2";
        default: return "scalar";
    }
}

Isa best_isa() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("bmi2")) {
        return Isa::avx512;
    }
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi") &&
        __builtin_cpu_supports("bmi2")) {
        return Isa::avx2;
    }
#endif
    return Isa::scalar;
}

bool fast_gathers() {
#if defined(__x86_64__) || defined(__i386__)
    static const bool intel = [] {
        __builtin_cpu_init();
        return __builtin_cpu_is("intel");
    }();
    return intel;
#else
    return false;
#endif
}

Isa active_isa() {
    static const Isa best = best_isa();
    // Read on every call (the entry points hold the GIL then), so a test can switch paths.
    const char* want = std::getenv("FSSTGPU_ISA");
    if (want == nullptr || *want == '\0') return best;
    Isa asked = best;
    if (std::strcmp(want, "scalar") == 0) asked = Isa::scalar;
    else if (std::strcmp(want, "avx2") == 0) asked = Isa::avx2;
    else if (std::strcmp(want, "avx512") == 0) asked = Isa::avx512;
    return static_cast<int>(asked) < static_cast<int>(best) ? asked : best;
}

}  // namespace fsstgpu_native
