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

#endif
