// The tile kernel in double precision (backends/tile_kernel.cuh): the one
// kernel that runs every op an observation stage can hold, and every
// distribution, on a tile in shared memory.
#include "lockstep/backends/tile_kernel_impl.cuh"

namespace lockstep {
namespace cuda {

TileLaunch plan_tile_launch(const TileKernelArgs<double>& a, int gpu, int lanes) {
  return plan_tile_launch_on(a, gpu, lanes);
}

void launch_tile_kernel(const TileKernelArgs<double>& a, const TileLaunch& l, cudaStream_t stream) {
  launch_tile_kernel_on(a, l, stream);
}

}  // namespace cuda
}  // namespace lockstep
