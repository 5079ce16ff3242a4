// A sampler's state between two iterations (Sampler::save_state()): named
// arrays of numbers holding everything its next iterations depend on (the
// chains' states and gradients, step sizes, metric, warmup's adaptation sums,
// the random streams' positions), so that a sampler made anew with the same
// settings over the same target and given it (Sampler::restore_state())
// makes exactly the draws the first would have made. This is what a
// checkpoint keeps of the sampler (R/checkpoint.R); R holds it as a named
// list of numeric vectors, which R serialises itself, so the core needs no
// file format of its own. Doubles hold every count and stream position
// exactly (they stay below 2^53).
#ifndef LOCKSTEP_SAMPLER_SAMPLER_STATE_HPP
#define LOCKSTEP_SAMPLER_SAMPLER_STATE_HPP

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace lockstep {

class SamplerState {
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
    if (!v) throw std::invalid_argument("the sampler's saved state has no `" + name + "`");
    if (size >= 0 && static_cast<long>(v->size()) != size)
      throw std::invalid_argument("the sampler's saved `" + name + "` has " +
                                  std::to_string(v->size()) + " values where this sampler has " +
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
