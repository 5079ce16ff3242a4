// Host driver that tools/check.sh links with the nvcc-compiled src/cuda/*.cu
// objects: it proves that every symbol backends/cuda.hpp declares is defined and
// that the objects link with the CUDA runtime. Where a GPU exists it may also
// be run (build/nvcc/link_check): it then checks a unary and a binary op.
#include <cmath>
#include <cstdio>
#include <exception>
#include <vector>

#include "lockstep/backends/cuda.hpp"
#include "lockstep/backends/cuda_executor.hpp"

int main() {
  using namespace lockstep;
  const int v = cuda::runtime_version();
  const std::vector<cuda::DeviceInfo> devs = cuda::devices();
  std::printf("CUDA runtime %d.%d, %zu device(s)\n", v / 1000, (v % 1000) / 10, devs.size());
  for (const cuda::DeviceInfo& d : devs) {
    std::printf("  %d: %s (sm_%d%d, %.1f GiB, %d SMs)\n", d.id, d.name.c_str(), d.major,
                d.minor, d.memory_gb, d.multiprocessors);
  }
  // The executor's entry points must link too (taking their addresses is
  // enough for the linker to need them).
  volatile bool linked = &cuda::make_executor != nullptr && &cuda::device_alloc != nullptr &&
                         &cuda::make_multi_device_executor != nullptr &&
                         &cuda::make_rank_executor != nullptr;
  std::printf("NCCL: %s\n", cuda::nccl_available() ? "loads" : "not available");
  if (devs.empty()) {
    std::printf("no device: link check only%s\n", linked ? "" : " (?)");
    return 0;
  }
  try {
    const long n = 1000;
    std::vector<double> a(n), b(n), y(n);
    for (long i = 0; i < n; ++i) {
      a[i] = 0.01 * static_cast<double>(i) - 3;
      b[i] = 1.5 + static_cast<double>(i % 7);
    }
    int bad = 0;
    cuda::elementwise_unary(Op::exp, a.data(), y.data(), n);
    for (long i = 0; i < n; ++i) bad += std::fabs(y[i] - std::exp(a[i])) > 1e-12 * std::exp(a[i]);
    cuda::elementwise_binary(Op::div, a.data(), b.data(), y.data(), n);
    for (long i = 0; i < n; ++i) bad += y[i] != a[i] / b[i];
    std::printf("%s (%d mismatches)\n", bad ? "FAILED" : "ok", bad);
    return bad ? 1 : 0;
  } catch (const std::exception& e) {
    std::printf("FAILED: %s\n", e.what());
    return 1;
  }
}
