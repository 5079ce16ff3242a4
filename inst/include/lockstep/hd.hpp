// LS_HD marks scalar math and kernel bodies that are compiled for both the host
// and the device: under nvcc they are __host__ __device__, elsewhere plain inline.
// Writing math once this way is what keeps the CPU, CUDA and emulated backends
// numerically identical (DESIGN.md, "Math written once").
#ifndef LOCKSTEP_HD_HPP
#define LOCKSTEP_HD_HPP

#if defined(__CUDACC__)
#define LS_HD __host__ __device__ inline
#else
#define LS_HD inline
#endif

// LS_HD_DISPATCH, before a template marked LS_HD that calls a functor it is
// given (forward_call() and backward_call() their launcher): the host's
// launchers are host code and the tile kernel's block runner device code,
// and nvcc is told that each instantiation runs only where its functor does.
#if defined(__CUDACC__)
#define LS_HD_DISPATCH _Pragma("nv_exec_check_disable")
#else
#define LS_HD_DISPATCH
#endif

// LS_HD_INLINE: LS_HD, and inlined on the host whatever the optimiser thinks of
// its size. For the math of the hot element loops (the common densities and
// math/elementary.hpp): the vectoriser sees through a function only once it is
// inlined, and one call left in a loop keeps the whole loop scalar.
#if defined(__CUDACC__)
#define LS_HD_INLINE __host__ __device__ __forceinline__
#elif defined(__GNUC__)
#define LS_HD_INLINE inline __attribute__((always_inline))
#else
#define LS_HD_INLINE inline
#endif

// LS_UNROLL: the loop that follows, whose trip count is a small constant,
// unrolled fully: GCC does not at -O2 by itself, and a loop left inside an
// element loop keeps that one from vectorising (math/log_gamma.hpp's ten
// recurrence factors). nvcc takes its own pragma, in its host pass too
// (where GCC's is a warning).
#if defined(__CUDACC__)
#define LS_UNROLL _Pragma("unroll")
#elif defined(__GNUC__) && !defined(__clang__)
#define LS_UNROLL _Pragma("GCC unroll 16")
#else
#define LS_UNROLL
#endif

// LS_CPU_CLONES: the CPU's hot loops (a kernel body's one-lane path) compiled
// three times, for the baseline x86-64, x86-64-v3 (AVX2 and FMA) and
// x86-64-v4 (AVX-512), the best one picked when the library is loaded (GCC's
// target_clones, an ifunc): the package is built with the compiler's portable
// flags, and still gets four or eight doubles per instruction on the
// processors that have them. Elsewhere (other compilers and processors, nvcc)
// it is nothing.
#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__) && defined(__x86_64__) && \
    defined(__linux__) && !defined(LOCKSTEP_NO_CLONES)
#define LS_CPU_CLONES __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
// The same clones, with loops vectorised even where they need a remainder
// loop or a check that arrays do not overlap (the compiler's cheapest
// vectorisation at -O2 does neither), and without fused multiply-adds, so
// that each element's value is the same number as in a plain loop (the
// sampler's fused passes are checked to the last bit against its separate
// operations).
#define LS_CPU_VECTORISE                                                              \
  __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4"),       \
                 optimize("fp-contract=off", "vect-cost-model=dynamic")))
#else
#define LS_CPU_CLONES
#define LS_CPU_VECTORISE
#endif

#endif
