// The kernels for avx512: kernels_impl.h compiled with this target (see that file).
#if defined(__x86_64__) || defined(__i386__)
#define FSSTGPU_ISA_NS avx512
#define FSSTGPU_ISA_LEVEL 2
#define FSSTGPU_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,bmi,bmi2,popcnt,lzcnt")))
#include "kernels_impl.h"
#else
// Not an x86 build: best_isa() never picks this set; the scalar copy stands in.
#include "kernels.h"
namespace fsstgpu_native {
namespace avx512 {
const Kernels table = scalar::table;
}  // namespace avx512
}  // namespace fsstgpu_native
#endif
