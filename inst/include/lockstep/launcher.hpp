// Where kernel bodies run on the host: the CPU backend (one lane, plain loops)
// or the emulated backend (the CUDA execution model, lane by lane). The cuda
// backend runs the same bodies on a GPU, through its own executor
// (backends/cuda_executor.hpp), never through this launcher.
#ifndef LOCKSTEP_LAUNCHER_HPP
#define LOCKSTEP_LAUNCHER_HPP

#include <string>

#include "lanes.hpp"

namespace lockstep {

enum class Backend : int { cpu, emulated, cuda };

Backend backend_from_name(const std::string& name);

struct Launcher {
  Backend backend = Backend::cpu;
  EmulatedGeometry geometry;

  template <class Body> void operator()(const Body& body) const {
    if (backend == Backend::emulated)
      run_emulated(body, geometry);
    else
      run_serial(body);
  }
};

}  // namespace lockstep

#endif
