// The kernels for avx2: kernels_impl.h compiled with this target (see that file).
#define FSSTGPU_ISA_NS avx2
#define FSSTGPU_ISA_LEVEL 1
#define FSSTGPU_TARGET __attribute__((target("avx2,bmi,bmi2,popcnt,lzcnt")))
#include "kernels_impl.h"
