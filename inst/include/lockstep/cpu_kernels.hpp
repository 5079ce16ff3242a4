// The kernel bodies that the CPU runs, compiled once per element type, in
// src/core/cpu_kernels_double.cpp and _float.cpp: one node's forward and
// backward on the cpu and emulated backends (through a Launcher) or recorded
// for replay (RecordedLaunches), the dispatch of node_kernels.hpp; and the
// tile kernel on the emulated backend (tile_kernel.hpp). The executor, the
// observation stage and the CUDA executors' host code call these rather than
// instantiating forward_call(), backward_call() or run_tiles_emulated()
// themselves: every op's bodies were otherwise compiled again in each of
// those files (the two largest took five minutes each to compile, most of
// an install's time).
#ifndef LOCKSTEP_CPU_KERNELS_HPP
#define LOCKSTEP_CPU_KERNELS_HPP

#include "launcher.hpp"
#include "node_kernels.hpp"
#include "recorded_launches.hpp"
#include "tile_kernel.hpp"

namespace lockstep {

// forward_call(call, launch) and backward_call(call, launch) of node_kernels.hpp
template <class T> void run_forward(const NodeCall<T>& call, const Launcher& launch);
template <class T> void run_backward(const NodeCall<T>& call, const Launcher& launch);
// the same calls' launches, appended to `launches` (replayed later)
template <class T> void run_forward(const NodeCall<T>& call, RecordedLaunches& launches);
template <class T> void run_backward(const NodeCall<T>& call, RecordedLaunches& launches);

// run_tiles_emulated(a, g) with the GPU's tile kernel's code (LinearTileKernels)
// where `linear`, else with every op's.
template <class T> void emulate_tile_kernel(const TileKernelArgs<T>& a, EmulatedGeometry g, bool linear);

}  // namespace lockstep

// The definitions, seen only by the two files that compile them (they define
// LOCKSTEP_CPU_KERNELS_HERE): elsewhere a call links to those files' copies.
#ifdef LOCKSTEP_CPU_KERNELS_HERE
namespace lockstep {
template <class T> void run_forward(const NodeCall<T>& call, const Launcher& launch) {
  forward_call(call, launch);
}
template <class T> void run_backward(const NodeCall<T>& call, const Launcher& launch) {
  backward_call(call, launch);
}
template <class T> void run_forward(const NodeCall<T>& call, RecordedLaunches& launches) {
  forward_call(call, launches);
}
template <class T> void run_backward(const NodeCall<T>& call, RecordedLaunches& launches) {
  backward_call(call, launches);
}
template <class T>
void emulate_tile_kernel(const TileKernelArgs<T>& a, EmulatedGeometry g, bool linear) {
  if (linear)
    run_tiles_emulated<LinearTileKernels>(a, g);
  else
    run_tiles_emulated(a, g);
}
}  // namespace lockstep

// The explicit instantiations for element type T, at namespace scope.
#define LOCKSTEP_CPU_KERNELS(T)                                                             \
  template void lockstep::run_forward<T>(const lockstep::NodeCall<T>&,                       \
                                         const lockstep::Launcher&);                         \
  template void lockstep::run_backward<T>(const lockstep::NodeCall<T>&,                      \
                                          const lockstep::Launcher&);                        \
  template void lockstep::run_forward<T>(const lockstep::NodeCall<T>&,                       \
                                         lockstep::RecordedLaunches&);                       \
  template void lockstep::run_backward<T>(const lockstep::NodeCall<T>&,                      \
                                          lockstep::RecordedLaunches&);                      \
  template void lockstep::emulate_tile_kernel<T>(const lockstep::TileKernelArgs<T>&,         \
                                                 lockstep::EmulatedGeometry, bool);
#endif

#endif
