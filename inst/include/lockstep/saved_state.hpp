// The state of a sampler (Sampler::save_state()) or of a variational fit
// (Svi::save_state()) between two iterations: named arrays of numbers
// holding everything the next iterations depend on (a sampler's chains'
// states and gradients, step sizes, metric, warmup's adaptation sums and
// random streams' positions; a fit's guide and optimiser moments), so that
// one made anew with the same settings over the same target and given it
// (restore_state()) goes on exactly as the first would have. This is what a
// checkpoint keeps of it (R/checkpoint.R); R holds it as a named list of
// numeric vectors, which R serialises itself, so the core needs no file
// format of its own. Doubles hold every count and stream position exactly
// (they stay below 2^53).
#ifndef LOCKSTEP_SAVED_STATE_HPP
#define LOCKSTEP_SAVED_STATE_HPP

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace lockstep {

class SavedState {
 public:
  using Part = std::pair<std::string, std::vector<double>>;

  void put(const std::string& name, std::vector<double> values) {
    for (Part& p : parts_)
      if (p.first == name) {
        p.second = std::move(values);
        return;
      }
    parts_.emplace_back(name, std::move(values));
  }
  void put(const std::string& name, double value) { put(name, std::vector<double>{value}); }
  // integers of any width, as doubles
  template <class T> void put_numbers(const std::string& name, const std::vector<T>& values) {
    put(name, std::vector<double>(values.begin(), values.end()));
  }

  bool has(const std::string& name) const { return find(name) != nullptr; }
  // The array `name`, refused (naming it) when it is missing or, with
  // size >= 0, has another length: a state from another sampler or model.
  const std::vector<double>& get(const std::string& name, long size = -1) const {
    const std::vector<double>* v = find(name);
    if (!v) throw std::invalid_argument("the saved state has no `" + name + "`");
    if (size >= 0 && static_cast<long>(v->size()) != size)
      throw std::invalid_argument("the saved `" + name + "` has " +
                                  std::to_string(v->size()) + " values where this one has " +
                                  std::to_string(size));
    return *v;
  }
  double scalar(const std::string& name) const { return get(name, 1)[0]; }
  // get() converted to integers of type T
  template <class T> std::vector<T> numbers(const std::string& name, long size = -1) const {
    const std::vector<double>& v = get(name, size);
    return std::vector<T>(v.begin(), v.end());
  }

  const std::vector<Part>& parts() const { return parts_; }

 private:
  const std::vector<double>* find(const std::string& name) const {
    for (const Part& p : parts_)
      if (p.first == name) return &p.second;
    return nullptr;
  }
  std::vector<Part> parts_;
};

}  // namespace lockstep

#endif
