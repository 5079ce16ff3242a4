// The CUDA backend as the rest of the package sees it: plain C++ (no CUDA
// types), so that g++-compiled code such as src/rcpp_backend.cpp can include it.
// The definitions live in src/cuda/*.cu and exist only in a build where
// configure found nvcc, which defines LOCKSTEP_HAS_CUDA; callers guard their
// use with #ifdef LOCKSTEP_HAS_CUDA.
#ifndef LOCKSTEP_BACKENDS_CUDA_HPP
#define LOCKSTEP_BACKENDS_CUDA_HPP

#include <string>
#include <vector>

#include "../ir.hpp"

namespace lockstep {
namespace cuda {

// What a CUDA call says in a build where configure found no nvcc.
constexpr const char* built_without_cuda =
    "lockstep was built without CUDA: reinstall it where configure finds nvcc";

struct DeviceInfo {
  int id;
  std::string name;
  int major, minor;  // compute capability
  double memory_gb;  // global memory, GiB
  int multiprocessors;
};

// The visible devices; empty, never an error, when there is no driver or no GPU.
std::vector<DeviceInfo> devices();

// The CUDA runtime version the package was built with, e.g. 13000 for 13.0.
int runtime_version();

// Whether several GPUs' partial sums go through NCCL: the build has NCCL's
// header (configure found nccl.h) and libnccl.so.2 loads here
// (src/cuda/multi_device_executor.cu).
bool nccl_available();

// y = op(x) elementwise on device 0 for a unary op of ops.def; and
// y = op(a, b) for a binary op, with a, b and y all of length n (no
// broadcasting). Host arrays in and out: copies to the device, runs the
// UnaryForward / BinaryForward body of kernels/elementwise.hpp, copies back.
// Throws std::runtime_error when no device is visible and
// std::invalid_argument when op is not of the right family.
void elementwise_unary(Op op, const double* x, double* y, long n);
void elementwise_binary(Op op, const double* a, const double* b, double* y, long n);

}  // namespace cuda
}  // namespace lockstep

#endif
