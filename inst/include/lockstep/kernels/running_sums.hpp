// The CPU's sums of a contiguous run of doubles, with several running sums so
// that the additions overlap instead of each waiting for the one before (a
// single sum of n terms takes n times the latency of an addition, whatever
// the vector width). The order is fixed by the code, not by the machine: the
// same inputs give the same sum on every run, for a given instruction set
// (LS_CPU_CLONES picks it).
#ifndef LOCKSTEP_KERNELS_RUNNING_SUMS_HPP
#define LOCKSTEP_KERNELS_RUNNING_SUMS_HPP

namespace lockstep {
namespace detail {

// The sum of x[0, n) with four running sums.
inline double sum_doubles(const double* x, long n) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  long i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += x[i];
    s1 += x[i + 1];
    s2 += x[i + 2];
    s3 += x[i + 3];
  }
  for (; i < n; ++i) s0 += x[i];
  return (s0 + s1) + (s2 + s3);
}

// The sum of x[i] y[i] over [0, n), in double, with dot_sums running sums
// (element i into sum i mod dot_sums, the tail into the first): sixteen keep
// two AVX-512 or four AVX2 registers of products in flight, which the
// vectoriser packs from the fixed-size array.
constexpr int dot_sums = 16;
template <class X, class Y> inline double dot_doubles(const X* x, const Y* y, long n) {
  double s[dot_sums] = {0};
  long i = 0;
  for (; i + dot_sums <= n; i += dot_sums)
    for (int q = 0; q < dot_sums; ++q)
      s[q] += static_cast<double>(x[i + q]) * static_cast<double>(y[i + q]);
  for (; i < n; ++i) s[0] += static_cast<double>(x[i]) * static_cast<double>(y[i]);
  double total = 0;
  for (int q = 0; q < dot_sums; ++q) total += s[q];
  return total;
}

}  // namespace detail
}  // namespace lockstep

#endif
