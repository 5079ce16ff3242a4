// The kernel bodies the CPU runs, for float elements (cpu_kernels.hpp says why
// they are compiled here alone).
#define LOCKSTEP_CPU_KERNELS_HERE
#include "lockstep/cpu_kernels.hpp"

LOCKSTEP_CPU_KERNELS(float)
