// The CPU's loops of every family's density term for float elements
// (kernels/density_cpu.hpp says why they are compiled here alone).
#include "lockstep/kernels/density_cpu.hpp"

#define LS_DIST(name, n_params, continuous, tile) LOCKSTEP_DENSITY_TERM_OF(float, name)
#include "lockstep/distributions.def"
#undef LS_DIST
