// The CPU's sums of a contiguous run of values, with several running sums so
// that the additions overlap instead of each waiting for the one before (a
// single sum of n terms takes n times the latency of an addition, whatever
// the vector width). Term i goes into running sum i mod running_sums (the
// tail into the first), and the running sums are added in order at the end:
// the order is fixed by the code, not by the machine, so the same inputs give
// the same sum on every run for a given instruction set (LS_CPU_CLONES picks
// it). Sixteen sums keep two AVX-512 or four AVX2 registers in flight, which
// the vectoriser packs from the fixed-size array; four, in one register,
// left the element loops of a small model's densities waiting on their sums.
#ifndef LOCKSTEP_KERNELS_RUNNING_SUMS_HPP
#define LOCKSTEP_KERNELS_RUNNING_SUMS_HPP

namespace lockstep {
namespace detail {

constexpr int running_sums = 16;

// The sum of term(i) over [0, n), in double.
template <class Term> inline double running_sum(long n, const Term& term) {
  double s[running_sums] = {0};
  long i = 0;
  for (; i + running_sums <= n; i += running_sums)
    for (int q = 0; q < running_sums; ++q) s[q] += term(i + q);
  for (; i < n; ++i) s[0] += term(i);
  double total = 0;
  for (int q = 0; q < running_sums; ++q) total += s[q];
  return total;
}

// The sum of x[0, n).
inline double sum_doubles(const double* x, long n) {
  return running_sum(n, [x](long i) { return x[i]; });
}

// The sum of x[i] y[i] over [0, n), in double.
template <class X, class Y> inline double dot_doubles(const X* x, const Y* y, long n) {
  return running_sum(n, [x, y](long i) { return static_cast<double>(x[i]) * static_cast<double>(y[i]); });
}

}  // namespace detail
}  // namespace lockstep

#endif
