// Devices and runtime version of the CUDA backend (backends/cuda.hpp).
#include <cuda_runtime.h>

#include "lockstep/backends/cuda.hpp"

namespace lockstep {
namespace cuda {

std::vector<DeviceInfo> devices() {
  std::vector<DeviceInfo> out;
  int count = 0;
  // Without a driver or a GPU this fails (cudaErrorInsufficientDriver,
  // cudaErrorNoDevice): that means no devices, not an error. The runtime's
  // sticky last error is cleared so that later calls do not report it.
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return out;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) {
      cudaGetLastError();
      continue;
    }
    DeviceInfo d;
    d.id = i;
    d.name = p.name;
    d.major = p.major;
    d.minor = p.minor;
    d.memory_gb = static_cast<double>(p.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0);
    d.multiprocessors = p.multiProcessorCount;
    out.push_back(d);
  }
  return out;
}

int runtime_version() {
  int v = 0;
  if (cudaRuntimeGetVersion(&v) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return v;
}

}  // namespace cuda
}  // namespace lockstep
