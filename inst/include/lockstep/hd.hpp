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

#endif
