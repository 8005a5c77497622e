// The kernels for avx2: kernels_impl.h compiled with this target (see that file).
#if defined(__x86_64__) || defined(__i386__)
#define FSSTGPU_ISA_NS avx2
#define FSSTGPU_ISA_LEVEL 1
#define FSSTGPU_TARGET __attribute__((target("avx2,bmi,bmi2,popcnt,lzcnt")))
#include "kernels_impl.h"
#else
// Not an x86 build: best_isa() never picks this set; the scalar copy stands in.
#include "kernels.h"
namespace fsstgpu_native {
namespace avx2 {
const Kernels table = scalar::table;
}  // namespace avx2
}  // namespace fsstgpu_native
#endif
