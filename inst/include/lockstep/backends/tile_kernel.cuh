// The tile kernel on a CUDA GPU (tile_kernel.hpp): each block runs
// run_tile() on its tiles, its threads the lanes, its dynamic shared memory
// the block memory (the bodies' scratch, a density's per-chain sums and the
// tile's values and adjoints). Declarations; the kernel itself is compiled
// once per precision in src/cuda/tile_kernel_*.cu (tile_kernel_impl.cuh), out
// of the executor's files, which nvcc then compiles side by side with them.
// Include only from .cu files.
#ifndef LOCKSTEP_BACKENDS_TILE_KERNEL_CUH
#define LOCKSTEP_BACKENDS_TILE_KERNEL_CUH

#include <cuda_runtime.h>

#include <cstddef>

#include "../tile_kernel.hpp"
#include "cuda_launch.cuh"

namespace lockstep {
namespace cuda {

// How a stage's tile kernel is launched on a device.
struct TileLaunch {
  int blocks = 0, lanes = 0;
  size_t shared_bytes = 0;
};

// Lanes per block of the tile kernel, at most (lanes_within_shared()'s
// start): its __launch_bounds__ keeps the compiler to the registers that let
// a block this wide launch.
constexpr int tile_kernel_lanes = 256;

// The launch of `a` on the current device (`gpu`), with `lanes` lanes per
// block: its shared memory (opted in beyond 48 KiB) and as many blocks as fit
// on the device at once, no more than there are tiles. Throws where the
// block memory exceeds what a block may have.
TileLaunch plan_tile_launch(const TileKernelArgs<double>& a, int gpu, int lanes);
TileLaunch plan_tile_launch(const TileKernelArgs<float>& a, int gpu, int lanes);

// Queues the tile kernel on `stream` and checks that the launch was accepted.
void launch_tile_kernel(const TileKernelArgs<double>& a, const TileLaunch& l, cudaStream_t stream);
void launch_tile_kernel(const TileKernelArgs<float>& a, const TileLaunch& l, cudaStream_t stream);

}  // namespace cuda
}  // namespace lockstep

#endif
