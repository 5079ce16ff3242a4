// A pass's kernel launches, recorded once and replayed.
//
// forward_call() and backward_call() (node_kernels.hpp) build each kernel body
// from a node's call: its operands' addressing, its shapes, its adjoint sinks.
// For the executor's pass over every chain on one thread, a node's call
// changes only with the state, log-density and gradient buffers the pass is
// given, so the bodies it builds are the same at every gradient while those
// stay put (a sampler's leapfrog steps pass the same buffers every time). A
// small model's gradient (posteriordb's gp_pois_regr: 29 nodes, a few
// microseconds) spent about a fifth of its time rebuilding them. Passed to
// forward_call() / backward_call() as their launcher, a RecordedLaunches keeps
// a copy of every body in launch order; replay() launches the copies, in that
// order, through the executor's own launcher (the CPU's one lane or the
// emulated backend's lanes), doing what the calls would have done.
#ifndef LOCKSTEP_RECORDED_LAUNCHES_HPP
#define LOCKSTEP_RECORDED_LAUNCHES_HPP

#include <cstddef>
#include <cstring>
#include <type_traits>
#include <vector>

#include "launcher.hpp"

namespace lockstep {

class RecordedLaunches {
 public:
  // Records one launch: a copy of the body (a kernel body is plain data:
  // pointers into buffers that outlive the recording, sizes and flags).
  template <class Body> void operator()(const Body& body) {
    static_assert(std::is_trivially_copyable<Body>::value,
                  "a recorded kernel body must be plain data");
    static_assert(alignof(Body) <= alignof(Unit), "a kernel body's alignment is too large");
    const size_t at = storage_.size();
    storage_.resize(at + (sizeof(Body) + sizeof(Unit) - 1) / sizeof(Unit));
    std::memcpy(static_cast<void*>(storage_.data() + at), &body, sizeof(Body));
    entries_.push_back(Entry{at, &launch_body<Body>});
  }

  void clear() {
    storage_.clear();
    entries_.clear();
  }
  long size() const { return static_cast<long>(entries_.size()); }

  // Launches the recorded bodies in the order they were recorded.
  void replay(const Launcher& launch) const {
    for (const Entry& e : entries_) e.run(launch, storage_.data() + e.at);
  }

 private:
  using Unit = std::max_align_t;
  struct Entry {
    size_t at;  // where the body starts in storage_, in Units
    void (*run)(const Launcher&, const Unit*);
  };
  template <class Body> static void launch_body(const Launcher& launch, const Unit* at) {
    launch(*reinterpret_cast<const Body*>(at));
  }

  std::vector<Unit> storage_;
  std::vector<Entry> entries_;
};

}  // namespace lockstep

#endif
