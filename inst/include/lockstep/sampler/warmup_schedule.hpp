// Windows of warmup in which the diagonal mass matrix (greta's diag_sd) is
// estimated, as Stan schedules them: a fast initial buffer where only the step
// size adapts, slow windows that double in length and end in a new diag_sd,
// and a terminal buffer where the step size settles for the final metric.
#ifndef LOCKSTEP_SAMPLER_WARMUP_SCHEDULE_HPP
#define LOCKSTEP_SAMPLER_WARMUP_SCHEDULE_HPP

#include <vector>

namespace lockstep {

struct WarmupSchedule {
  std::vector<long> window_ends;  // iterations (1-based) after which diag_sd is updated
  long first_window_start = 0;    // iterations before this one only adapt the step size

  static WarmupSchedule make(long warmup) {
    WarmupSchedule s;
    if (warmup < 20) return s;  // too short to estimate variances: step size only
    long init = 75, term = 50, base = 25;
    if (init + base + term > warmup) {
      init = warmup * 15 / 100;
      term = warmup / 10;
      base = warmup - init - term;
    }
    s.first_window_start = init;
    const long last = warmup - term;
    long start = init, size = base;
    while (start < last) {
      long end = start + size;
      if (end + 2 * size > last) end = last;  // the next window would not fit: extend this one
      s.window_ends.push_back(end);
      start = end;
      size *= 2;
    }
    return s;
  }
};

}  // namespace lockstep

#endif
