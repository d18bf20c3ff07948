// A scheduler's per-request state kept across an engine's calls (batch/kept_order.h), by
// request id: the entries in a slab (a slot is reused after its request leaves), found
// through a flat index (core/flat_index.h). Each call looks up every running request; with
// a node-based map that lookup was the largest cost of EDF in a burst.
#pragma once
#include <cstdint>
#include <vector>

#include "slocore/core/errors.h"
#include "slocore/core/flat_index.h"
#include "slocore/core/types.h"

namespace slocore {

template <class T>
class KeptMap {
 public:
  bool empty() const { return at_.empty(); }
  // A pointer stays valid until the next emplace.
  T* find(Id id) {
    const uint32_t k = at_.find(uint64_t(id));
    return k == Index::kNone ? nullptr : &slab_[k];
  }
  T& at(Id id) {
    T* t = find(id);
    require(t != nullptr, "scheduler", "a request it keeps is missing from its map");
    return *t;
  }
  // Adds id -> value; nullptr (adding nothing) when id is there already.
  T* emplace(Id id, const T& value) {
    const uint32_t k = spare_.empty() ? uint32_t(slab_.size()) : spare_.back();
    if (at_.insert(uint64_t(id), k) != Index::kNone) return nullptr;
    if (spare_.empty()) {
      slab_.push_back(value);
    } else {
      spare_.pop_back();
      slab_[k] = value;
    }
    return &slab_[k];
  }
  bool erase(Id id) {
    const uint32_t k = at_.find(uint64_t(id));
    if (k == Index::kNone) return false;
    at_.erase(uint64_t(id));
    spare_.push_back(k);
    return true;
  }
  void clear() {
    if (at_.empty()) return;
    at_.clear();
    slab_.clear();
    spare_.clear();
  }

 private:
  using Index = FlatIndex<KeyBits::Sequential>;
  std::vector<T> slab_;
  std::vector<uint32_t> spare_;
  Index at_;
};

}  // namespace slocore
