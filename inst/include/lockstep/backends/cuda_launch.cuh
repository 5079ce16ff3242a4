// Runs a lanes-policy kernel body (lanes.hpp) on a CUDA device: one lane per
// thread, lane.index = blockIdx.x * blockDim.x + threadIdx.x, lane.count =
// gridDim.x * blockDim.x, the block's dynamic shared memory as lane.shared, and
// __syncthreads() between the body's phases. Include only from .cu files.
#ifndef LOCKSTEP_BACKENDS_CUDA_LAUNCH_CUH
#define LOCKSTEP_BACKENDS_CUDA_LAUNCH_CUH

#include <cuda_runtime.h>

#include <cstdio>
#include <stdexcept>
#include <string>

#include "../lanes.hpp"

namespace lockstep {
namespace cuda {

// Throws std::runtime_error naming what failed and CUDA's own message.
inline void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) {
    throw std::runtime_error(std::string("lockstep CUDA: ") + what + ": " +
                             cudaGetErrorString(err));
  }
}

// cudaMalloc of `bytes` on the current device, GPU `gpu`; where that fails, a
// std::runtime_error: "lockstep CUDA: <who> needs another X GiB of GPU
// memory<for_what>; GPU g has Y GiB free (of Z GiB)".
inline void* device_malloc(size_t bytes, int gpu, const char* who, const std::string& for_what = "") {
  void* p = nullptr;
  if (cudaMalloc(&p, bytes > 0 ? bytes : 1) == cudaSuccess) return p;
  cudaGetLastError();
  size_t free_bytes = 0, total_bytes = 0;
  cudaMemGetInfo(&free_bytes, &total_bytes);
  char figures[160];
  std::snprintf(figures, sizeof figures, "; GPU %d has %.2f GiB free (of %.2f GiB)", gpu,
                free_bytes / 1073741824.0, total_bytes / 1073741824.0);
  char needed[64];
  std::snprintf(needed, sizeof needed, "%.2f", bytes / 1073741824.0);
  throw std::runtime_error(std::string("lockstep CUDA: ") + who + " needs another " + needed +
                           " GiB of GPU memory" + for_what + figures);
}

// Lanes per block for a body with per_lane doubles of block-shared scratch
// per lane: 256, halved (down to 32) while the scratch would pass the 48 KiB
// that needs no opt-in.
inline int lanes_within_shared(long per_lane) {
  int lanes = 256;
  while (lanes > 32 && lanes * per_lane * static_cast<long>(sizeof(double)) > 48 * 1024) lanes /= 2;
  return lanes;
}

// The body is passed by value (kernel parameter), so it must be trivially
// copyable and hold device pointers only. It is a __grid_constant__ (CUDA
// 11.7 and later, sm_70 and later): its operator() takes the body's address
// (`this`), and a plain by-value parameter whose address is taken is first
// copied into each thread's local memory (ptxas -v: 400 to 600 bytes of stack
// frame for the density and logpdf bodies, 240 for the row dot product's
// backward), so that every read of a member went through L1 as a local load.
// A grid constant is read in place, from the parameter space.
#if defined(__CUDACC__) && (__CUDACC_VER_MAJOR__ > 11 || \
                            (__CUDACC_VER_MAJOR__ == 11 && __CUDACC_VER_MINOR__ >= 7))
#define LOCKSTEP_GRID_CONSTANT __grid_constant__
#else
#define LOCKSTEP_GRID_CONSTANT
#endif
template <class Body>
__global__ void lanes_kernel(const LOCKSTEP_GRID_CONSTANT Body body) {
  extern __shared__ double lockstep_lanes_shared[];
  const Lane lane{static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x,
                  static_cast<long>(gridDim.x) * blockDim.x,
                  static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x),
                  lockstep_lanes_shared};
  for (int p = 0; p < body.phases; ++p) {
    if (p > 0) __syncthreads();
    body(p, lane);
  }
}

// Launches body on `blocks` blocks of `threads` lanes, with threads *
// shared_per_lane doubles of dynamic shared memory per block, and checks that
// the launch was accepted. Errors raised while the kernel runs surface at the
// next synchronising call (a copy back, cudaStreamSynchronize), which callers
// check as well.
template <class Body>
void launch_cuda(const Body& body, int blocks, int threads, cudaStream_t stream = 0) {
  if (blocks <= 0 || threads <= 0) return;
  const size_t shared = static_cast<size_t>(threads) *
                        static_cast<size_t>(body.shared_per_lane > 0 ? body.shared_per_lane : 0) *
                        sizeof(double);
  if (shared > 48 * 1024) {
    // Beyond 48 KiB a kernel must opt in to more dynamic shared memory.
    check(cudaFuncSetAttribute(lanes_kernel<Body>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(shared)),
          "requesting dynamic shared memory");
  }
  lanes_kernel<Body><<<blocks, threads, shared, stream>>>(body);
  check(cudaGetLastError(), "kernel launch");
}

}  // namespace cuda
}  // namespace lockstep

#endif
