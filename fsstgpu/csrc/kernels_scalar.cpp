// The kernels for scalar: kernels_impl.h compiled with this target (see that file).
#define FSSTGPU_ISA_NS scalar
#define FSSTGPU_ISA_LEVEL 0
#define FSSTGPU_TARGET 
#include "kernels_impl.h"
