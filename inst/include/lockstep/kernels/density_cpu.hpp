// The CPU's loops of a density term (DensityTerm's sum_chains and
// data_term_sum, declared in density.hpp), out of line: the chunked loop of
// every family, each in three instruction-set clones, is compiled once per
// element type, in src/core/density_terms_double.cpp and _float.cpp, rather
// than again in every file that runs kernel bodies on the CPU (the executor,
// the observation stage, the CUDA executors' host code, the tests).
// Include it only there.
#ifndef LOCKSTEP_KERNELS_DENSITY_CPU_HPP
#define LOCKSTEP_KERNELS_DENSITY_CPU_HPP

#include "density.hpp"

namespace lockstep {

template <class T, Family F>
void DensityTerm<T, F>::sum_chains(long chains, long size, double* out, long stride) const {
  const bool split = splits_data_term();
  const double shared = !split ? 0.0 : data_term_given ? data_term_total : data_term_sum(x.data, size);
  for (long c = 0; c < chains; ++c) out[c * stride] += sum_chain(c, size, split) + shared;
}

template <class T, Family F> double DensityTerm<T, F>::data_term_sum(const T* x, long size) {
  double xb[chunk], tb[chunk], total = 0;
  for (long i0 = 0; i0 < size; i0 += chunk) {
    const long n = size - i0 < chunk ? size - i0 : chunk;
    data_term_chunk(n, in_doubles(x + i0, n, xb), tb);
    total += detail::sum_doubles(tb, n);
  }
  return total;
}

}  // namespace lockstep

// The explicit instantiations for element type T, every family of
// distributions.def: LOCKSTEP_DENSITY_TERMS(double) at namespace scope.
#define LOCKSTEP_DENSITY_TERM_OF(T, name)                                                  \
  template void lockstep::DensityTerm<T, lockstep::Family::name>::sum_chains(long, long,   \
                                                                           double*, long) \
      const;                                                                               \
  template double lockstep::DensityTerm<T, lockstep::Family::name>::data_term_sum(const T*, \
                                                                                long);

#endif
