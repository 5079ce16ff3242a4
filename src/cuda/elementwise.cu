// Elementwise ops on the device from host arrays (backends/cuda.hpp): the
// UnaryForward / BinaryForward bodies of kernels/elementwise.hpp, the same ones
// the CPU and emulated backends run, launched through launch_cuda.
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "lockstep/backends/cuda.hpp"
#include "lockstep/backends/cuda_executor.hpp"
#include "lockstep/backends/cuda_launch.cuh"
#include "lockstep/kernels/elementwise.hpp"

namespace lockstep {
namespace cuda {
namespace {

// Device memory for n doubles, freed on scope exit (also when a check throws).
class DeviceBuffer {
 public:
  explicit DeviceBuffer(long n) {
    if (n > 0) check(cudaMalloc(&p_, static_cast<size_t>(n) * sizeof(double)), "cudaMalloc");
  }
  ~DeviceBuffer() {
    if (p_) cudaFree(p_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  double* get() const { return p_; }

 private:
  double* p_ = nullptr;
};

void require_device() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();
    throw std::runtime_error("lockstep CUDA: no CUDA device is visible");
  }
}

// Enough blocks to give each lane about one element, capped: the bodies loop
// with a grid stride, so any grid covers any n.
constexpr int kThreads = 256;
int blocks_for(long n) {
  const long b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(std::min<long>(std::max<long>(b, 1), 65536));
}

void check_args(long n, const char* family) {
  if (n < 0) throw std::invalid_argument(std::string("lockstep CUDA: negative length for a ") + family + " op");
}

}  // namespace

void elementwise_unary(Op op, const double* x, double* y, long n) {
  if (op_family(op) != OpFamily::unary) {
    throw std::invalid_argument("lockstep CUDA: op " + std::to_string(static_cast<int>(op)) +
                                " is not a unary op");
  }
  check_args(n, "unary");
  require_device();
  if (n == 0) return;
  DeviceBuffer dx(n), dy(n);
  copy_to_device(dx.get(), x, n);
  UnaryForward<double> body{op, Operand<double>{dx.get(), 0, false}, dy.get(), 1, n};
  launch_cuda(body, blocks_for(n), kThreads);
  copy_to_host(y, dy.get(), n);
}

void elementwise_binary(Op op, const double* a, const double* b, double* y, long n) {
  if (op_family(op) != OpFamily::binary) {
    throw std::invalid_argument("lockstep CUDA: op " + std::to_string(static_cast<int>(op)) +
                                " is not a binary op");
  }
  check_args(n, "binary");
  require_device();
  if (n == 0) return;
  DeviceBuffer da(n), db(n), dy(n);
  copy_to_device(da.get(), a, n);
  copy_to_device(db.get(), b, n);
  BinaryForward<double> body{op, Operand<double>{da.get(), 0, false},
                             Operand<double>{db.get(), 0, false}, dy.get(), 1, n};
  launch_cuda(body, blocks_for(n), kThreads);
  copy_to_host(y, dy.get(), n);
}

}  // namespace cuda
}  // namespace lockstep
