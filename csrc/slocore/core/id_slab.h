// Per-request state by request id: the entries in a slab (a slot is reused after its request
// leaves, keeping its storage), found through a flat index (core/flat_index.h). For state
// looked up every iteration: a scheduler's kept requests (batch/kept_order.h; with a
// node-based map that lookup was the largest cost of EDF in a burst), the engine's KV holds,
// slo_triage's blocks per running request, SIBYL's place of each tracked request,
// slo_predict's track of each request it placed (read at every token).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "slocore/core/errors.h"
#include "slocore/core/flat_index.h"
#include "slocore/core/types.h"

namespace slocore {

template <class T>
class IdSlab {
 public:
  bool empty() const { return at_.empty(); }
  size_t size() const { return at_.size(); }
  // A pointer stays valid until the next emplace.
  T* find(Id id) {
    const uint32_t k = at_.find(uint64_t(id));
    return k == Index::kNone ? nullptr : &slab_[k];
  }
  const T* find(Id id) const {
    const uint32_t k = at_.find(uint64_t(id));
    return k == Index::kNone ? nullptr : &slab_[k];
  }
  T& at(Id id) {
    T* t = find(id);
    require(t != nullptr, "request.id", "no entry for id " + std::to_string(id));
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
  // f(id, entry) for every entry.
  template <class F>
  void for_each(F&& f) {
    at_.for_each([&](uint64_t id, uint32_t k) { f(Id(id), slab_[k]); });
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
