// One copy of a program's row data in the order its observation stages run
// them (row_order.hpp), shared by every executor of the program (DESIGN.md,
// "Execution"; issue 50).
//
// An observation stage keeps its extent's row data (the data and values
// computed from data, one per row) and its gathers' per-row indices in that
// order. Where such an array does not depend on how the rows are cut into
// tiles (a single column, or data stored row by row within each tile, and
// the per-row index of a gather from a global value), its order is the rows'
// alone, and every stage of the program, whatever its chains, threads or
// tiles, holds the same array. svi() alone makes three executors of a model
// (its particles', and the cache's at 4 and at 1 chain), so at 15.7M rows a
// copy per stage was three times 42 bytes a row.
//
// The store hands out shared arrays, made by the first stage that asks and
// kept while any stage holds them (weak references: nothing stays when the
// last executor goes). Where the rows are already in order and the array is
// the program's own (a data node's values in double, a gather's index),
// the stage uses the program's array itself, with no copy at all (the
// program outlives its executors).
#ifndef LOCKSTEP_ROW_STORE_HPP
#define LOCKSTEP_ROW_STORE_HPP

#include <map>
#include <memory>
#include <mutex>
#include <type_traits>
#include <utility>
#include <vector>

#include "ir.hpp"

namespace lockstep {

class RowStore {
 public:
  // The store of `program`'s arrays, which must outlive it.
  explicit RowStore(const Program& program) : program_(&program) {}

  // Whether this store holds arrays of `p` (a copy of a program, cut or
  // reordered, has arrays of its own: a stage of one must not take the
  // store's).
  bool holds(const Program& p) const { return &p == program_; }

  // Node id's array in row order for stages that `reorder` rows (or not),
  // made by make() when no stage holds it now. T: the stage's values (row
  // data), or long (gather indices).
  template <class T, class Make>
  std::shared_ptr<const std::vector<T>> get(int id, bool reorder, Make&& make) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& kept = arrays<T>()[std::make_pair(id, reorder)];
    if (std::shared_ptr<const std::vector<T>> held = kept.lock()) return held;
    std::shared_ptr<const std::vector<T>> made = make();
    kept = made;
    return made;
  }
  // Whether a stage holds node id's array now (for tests).
  template <class T> bool held(int id, bool reorder) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = arrays<T>().find(std::make_pair(id, reorder));
    return it != arrays<T>().end() && !it->second.expired();
  }

 private:
  template <class T>
  using Kept = std::map<std::pair<int, bool>, std::weak_ptr<const std::vector<T>>>;
  template <class T> Kept<T>& arrays() {
    if constexpr (std::is_same<T, double>::value) return doubles_;
    else if constexpr (std::is_same<T, float>::value) return floats_;
    else return longs_;
  }

  const Program* program_;
  std::mutex mutex_;
  Kept<double> doubles_;
  Kept<float> floats_;
  Kept<long> longs_;
};

// A shared pointer to a program's own array, owning nothing: what a stage
// holds when it runs rows in the program's order.
template <class T> std::shared_ptr<const std::vector<T>> unowned(const std::vector<T>& v) {
  return std::shared_ptr<const std::vector<T>>(std::shared_ptr<void>(), &v);
}

// A stage's row data: an array of the row store's (or the stage's own),
// which `keep` holds, or the program's own data (DataValues, which may be
// the user's memory that the program borrows), which the program keeps.
// Empty and false when the node has none.
template <class T> class RowArray {
 public:
  using value_type = T;
  RowArray() = default;
  RowArray(std::shared_ptr<const std::vector<T>> v)  // NOLINT: a held array is row data
      : keep_(v), data_(v ? v->data() : nullptr), size_(v ? v->size() : 0), set_(v != nullptr) {}
  // n values at p that outlive the stage
  static RowArray of(const T* p, size_t n) {
    RowArray a;
    a.data_ = p;
    a.size_ = n;
    a.set_ = true;
    return a;
  }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  explicit operator bool() const { return set_; }

 private:
  std::shared_ptr<const std::vector<T>> keep_;
  const T* data_ = nullptr;
  size_t size_ = 0;
  bool set_ = false;
};

}  // namespace lockstep

#endif
