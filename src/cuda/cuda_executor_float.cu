// The CUDA executor in single precision: float32 values and adjoints, sums and
// the state in double (backends/cuda_executor_impl.cuh).
#include "lockstep/backends/cuda_executor_impl.cuh"

namespace lockstep {
namespace cuda {
template class CudaExecutor<float>;
}  // namespace cuda
}  // namespace lockstep
