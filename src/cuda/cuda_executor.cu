// The CUDA executor's entry points (backends/cuda_executor.hpp): device
// selection, the factory over the two precisions, and device memory for tests
// and benchmarks.
#include <cuda_runtime.h>

#include <string>

#include "lockstep/backends/cuda_executor_impl.cuh"

namespace lockstep {
namespace cuda {

extern template class CudaExecutor<double>;
extern template class CudaExecutor<float>;

void select_device(int gpu) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();
    throw std::runtime_error("lockstep CUDA: no CUDA device is visible (no GPU, or no driver)");
  }
  if (gpu < 0 || gpu >= count)
    throw std::runtime_error("lockstep CUDA: there is no GPU " + std::to_string(gpu) + " (" +
                             std::to_string(count) + " visible, numbered from 0)");
  check(cudaSetDevice(gpu), "selecting the GPU");
}

std::unique_ptr<DeviceExecutor> make_executor(const Program& program, long chains,
                                              const ExecOptions& options, bool single) {
  if (options.gpus.size() > 1) return make_multi_device_executor(program, chains, options, single);
  if (single) return std::make_unique<CudaExecutor<float>>(program, chains, options);
  return std::make_unique<CudaExecutor<double>>(program, chains, options);
}

double* device_alloc(long n) {
  void* p = nullptr;
  check(cudaMalloc(&p, static_cast<size_t>(n > 0 ? n : 1) * sizeof(double)), "cudaMalloc");
  return static_cast<double*>(p);
}

void device_free(double* p) {
  if (p) cudaFree(p);
}

void copy_to_device(double* dst, const double* src, long n) {
  check(cudaMemcpy(dst, src, static_cast<size_t>(n) * sizeof(double), cudaMemcpyHostToDevice),
        "copy to device");
}

void copy_to_host(double* dst, const double* src, long n) {
  check(cudaMemcpy(dst, src, static_cast<size_t>(n) * sizeof(double), cudaMemcpyDeviceToHost),
        "copy to host");
}

}  // namespace cuda
}  // namespace lockstep
