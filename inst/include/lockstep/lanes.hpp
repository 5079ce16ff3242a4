// The lanes policy (DESIGN.md, "Math written once").
//
// A kernel body is a functor with
//   int phases;                 // number of phases, separated by barriers
//   int shared_per_lane;        // doubles of block-shared scratch per lane
//   LS_HD void operator()(int phase, const Lane& lane) const;
// Inside a phase a body loops `for (i = lane.index; i < n; i += lane.count)`;
// work that needs every lane of a block to have finished a phase goes in the
// next phase (the runner puts a barrier between phases). Lanes of one block
// share `lane.shared`, `lane.lanes_in_block * shared_per_lane` doubles.
//
// Runners:
//   run_serial    the CPU: one lane, so a body is a plain vectorisable loop.
//   run_emulated  the CUDA execution model on the CPU: every lane of every
//                 block in turn, phase by phase. This is how the CUDA code
//                 paths are tested without a GPU.
//   launch_cuda   (backends/cuda_launch.cuh) threadIdx/blockDim, __syncthreads().
#ifndef LOCKSTEP_LANES_HPP
#define LOCKSTEP_LANES_HPP

#include <cstddef>
#include <vector>
#include "hd.hpp"

namespace lockstep {

struct Lane {
  long index;          // this lane's global index
  long count;          // lanes in the whole launch (the stride of grid-stride loops)
  int in_block;        // this lane's index within its block
  int lanes_in_block;  // lanes per block
  double* shared;      // block-shared scratch
};

// Adds v to *p. Lanes of a launch may add to the same address: on the GPU this is
// an atomic; the serial and emulated runners run one lane at a time.
LS_HD void lane_add(double* p, double v) {
#if defined(__CUDA_ARCH__)
  atomicAdd(p, v);
#else
  *p += v;
#endif
}

LS_HD void lane_add(float* p, float v) {
#if defined(__CUDA_ARCH__)
  atomicAdd(p, v);
#else
  *p += v;
#endif
}

// The grid-stride loop over a [chains, size] layout that most bodies use:
// calls f(k, c, i) for each flat index k = c * size + i owned by this lane.
// One lane (the CPU backend) runs plain nested loops, which the compiler can
// vectorise; otherwise the chain and element follow k without a division per
// element.
template <class F> LS_HD void for_each_element(const Lane& lane, long chains, long size, F&& f) {
  if (lane.count == 1) {
    for (long c = 0; c < chains; ++c) {
      const long base = c * size;
      for (long i = 0; i < size; ++i) f(base + i, c, i);
    }
    return;
  }
  const long n = chains * size;
  long k = lane.index;
  if (k >= n) return;
  long c = k / size, i = k - c * size;
  for (; k < n; k += lane.count) {
    f(k, c, i);
    i += lane.count;
    while (i >= size) {
      i -= size;
      ++c;
    }
  }
}

// One phase of a body on one lane, out of line: each runner below (and the
// emulated tile kernel's, tile_kernel.hpp) calls a body through this, so that
// a body's code is compiled once, not inlined again into every runner that
// launches it (that made the CPU's kernels a third larger to compile). A
// call per phase and lane costs nothing beside a phase's loops.
template <class Body> __attribute__((noinline)) void run_phase(const Body& body, int phase, const Lane& lane) {
  body(phase, lane);
}

// The one lane's scratch is zeroed, as the emulated runner's is; on the
// stack when it is small (most bodies use none, a chain sum one double per
// chain), so that the launches of a small model's leapfrog step, dozens of
// them, allocate nothing.
template <class Body>
void run_serial(const Body& body) {
  constexpr long on_stack = 64;
  const long n = body.shared_per_lane > 0 ? body.shared_per_lane : 1;
  double local[on_stack];
  std::vector<double> heap(n > on_stack ? n : 0);
  double* shared = n > on_stack ? heap.data() : local;
  for (long k = 0; k < n; ++k) shared[k] = 0;
  Lane lane{0, 1, 0, 1, shared};
  for (int p = 0; p < body.phases; ++p) run_phase(body, p, lane);
}

// Geometry of the emulated launch: deliberately small and odd-sized so that
// a body that assumes one lane, or a power-of-two lane count, fails its tests.
struct EmulatedGeometry {
  int blocks = 3;
  int lanes_per_block = 5;
};
inline bool operator==(const EmulatedGeometry& a, const EmulatedGeometry& b) {
  return a.blocks == b.blocks && a.lanes_per_block == b.lanes_per_block;
}

template <class Body>
void run_emulated(const Body& body, EmulatedGeometry g = EmulatedGeometry()) {
  const long count = static_cast<long>(g.blocks) * g.lanes_per_block;
  std::vector<double> shared(static_cast<size_t>(g.lanes_per_block) *
                             (body.shared_per_lane > 0 ? body.shared_per_lane : 1));
  for (int b = 0; b < g.blocks; ++b) {
    for (int p = 0; p < body.phases; ++p) {
      for (int t = 0; t < g.lanes_per_block; ++t) {
        Lane lane{static_cast<long>(b) * g.lanes_per_block + t, count, t,
                  g.lanes_per_block, shared.data()};
        run_phase(body, p, lane);
      }
    }
  }
}

}  // namespace lockstep

#endif
