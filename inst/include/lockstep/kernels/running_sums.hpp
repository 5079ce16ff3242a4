// The CPU's sums of a contiguous run of values, with several running sums so
// that the additions overlap instead of each waiting for the one before (a
// single sum of n terms takes n times the latency of an addition, whatever
// the vector width). Term i goes into running sum i mod running_sums (the
// tail into the first), and the running sums are added pairwise at the end:
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

// The loops over the running sums unrolled, so that the sums live in
// registers: rolled, GCC kept them in their stack array and each addition
// waited on the store of the one before it to the same sum (three times the
// time of a 121-term dot product). The same additions in the same order.
#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
#define LS_UNROLL_SUMS _Pragma("GCC unroll 16")
#else
#define LS_UNROLL_SUMS
#endif

// The sum of term(i) over [0, n), in double. Fewer terms than running sums
// (a small model's 11-element vector) go into four running sums, each term i
// into sum i mod 4 (the tail into the first), so that their few additions do
// not wait in one chain and then on sixteen empty sums. The running sums are
// added pairwise, in a fixed order.
template <class Term> inline double running_sum(long n, const Term& term) {
  long i = 0;
  if (n < running_sums) {
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (; i + 4 <= n; i += 4) {
      s0 += term(i);
      s1 += term(i + 1);
      s2 += term(i + 2);
      s3 += term(i + 3);
    }
    for (; i < n; ++i) s0 += term(i);
    return (s0 + s1) + (s2 + s3);
  }
  double s[running_sums] = {0};
  for (; i + running_sums <= n; i += running_sums) {
    LS_UNROLL_SUMS
    for (int q = 0; q < running_sums; ++q) s[q] += term(i + q);
  }
  for (; i < n; ++i) s[0] += term(i);
  LS_UNROLL_SUMS
  for (int width = running_sums / 2; width > 0; width /= 2) {
    LS_UNROLL_SUMS
    for (int q = 0; q < width; ++q) s[q] += s[q + width];
  }
  return s[0];
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
