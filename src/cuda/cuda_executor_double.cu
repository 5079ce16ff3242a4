// The CUDA executor in double precision (backends/cuda_executor_impl.cuh).
// Instantiating it compiles every kernel body of node_kernels.hpp, and all the
// LS_HD math they call (every op and distribution), as device code.
#include "lockstep/backends/cuda_executor_impl.cuh"

namespace lockstep {
namespace cuda {
template class CudaExecutor<double>;
}  // namespace cuda
}  // namespace lockstep
