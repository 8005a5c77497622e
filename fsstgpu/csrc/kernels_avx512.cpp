// The kernels for avx512: kernels_impl.h compiled with this target (see that file).
#define FSSTGPU_ISA_NS avx512
#define FSSTGPU_ISA_LEVEL 2
#define FSSTGPU_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,bmi,bmi2,popcnt,lzcnt")))
#include "kernels_impl.h"
