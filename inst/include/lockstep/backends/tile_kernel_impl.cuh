// The tile kernel's definitions (backends/tile_kernel.cuh), for
// src/cuda/tile_kernel_double.cu and tile_kernel_float.cu. Include only there.
#ifndef LOCKSTEP_BACKENDS_TILE_KERNEL_IMPL_CUH
#define LOCKSTEP_BACKENDS_TILE_KERNEL_IMPL_CUH

#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "cuda_launch.cuh"
#include "tile_kernel.cuh"

namespace lockstep {
namespace cuda {

// One body on the block's threads alone, a barrier after each phase (so the
// next body, or the next tile, sees what this one wrote). Not inlined: the
// kernel calls one copy per body type rather than holding every body's code,
// and its registers, in one function.
struct DeviceBlockRun {
  double* shared;
  template <class Body> __device__ __noinline__ void operator()(const Body& body) const {
    const Lane lane{static_cast<long>(threadIdx.x), static_cast<long>(blockDim.x),
                    static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x), shared};
    for (int p = 0; p < body.phases; ++p) {
      body(p, lane);
      __syncthreads();
    }
  }
};

template <class T>
__global__ void __launch_bounds__(tile_kernel_lanes)
    tile_kernel(const LOCKSTEP_GRID_CONSTANT TileKernelArgs<T> a) {
  extern __shared__ double lockstep_tile_memory[];
  const DeviceBlockRun run{lockstep_tile_memory};
  for (long k = blockIdx.x; k < a.runs(); k += gridDim.x)
    run_tile<LinearTileKernels>(a, a.tile(k), lockstep_tile_memory, static_cast<int>(blockDim.x),
                                run);
}

template <class T> TileLaunch plan_tile_launch_on(const TileKernelArgs<T>& a, int gpu, int lanes) {
  TileLaunch l;
  l.lanes = lanes;
  l.shared_bytes = static_cast<size_t>(tile_block_doubles(a, lanes)) * sizeof(double);
  int most = 0;
  check(cudaDeviceGetAttribute(&most, cudaDevAttrMaxSharedMemoryPerBlockOptin, gpu),
        "reading the device's shared memory per block");
  if (l.shared_bytes > static_cast<size_t>(most))
    throw std::runtime_error("lockstep CUDA: a tile needs " + std::to_string(l.shared_bytes) +
                             " bytes of shared memory; a block may have " + std::to_string(most));
  if (l.shared_bytes > 48 * 1024)
    check(cudaFuncSetAttribute(tile_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(l.shared_bytes)),
          "requesting the tile kernel's shared memory");
  int per_multiprocessor = 0, multiprocessors = 0;
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_multiprocessor, tile_kernel<T>, lanes,
                                                      l.shared_bytes),
        "sizing the tile kernel's grid");
  check(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, gpu),
        "reading the device's multiprocessor count");
  if (per_multiprocessor < 1)
    throw std::runtime_error("lockstep CUDA: the tile kernel cannot launch with " +
                             std::to_string(l.shared_bytes) + " bytes of shared memory");
  l.blocks = static_cast<int>(
      std::min<long>(a.tiles, static_cast<long>(per_multiprocessor) * multiprocessors));
  return l;
}

template <class T>
void launch_tile_kernel_on(const TileKernelArgs<T>& a, const TileLaunch& l, cudaStream_t stream) {
  if (l.blocks <= 0) return;
  tile_kernel<T><<<l.blocks, l.lanes, l.shared_bytes, stream>>>(a);
  check(cudaGetLastError(), "launching the tile kernel");
}

}  // namespace cuda
}  // namespace lockstep

#endif
