// A map from request id to a small value, for the few ids of one engine iteration or one
// plan (sim::Engine's planned items, PlanBuilder's planned and preempted ids): a flat
// open-addressing table (linear probing) whose slots carry a generation stamp, so clear() is
// O(1) and nothing is allocated once the table has grown to the batch size. Usable without a
// first clear().
#pragma once
#include <cstdint>
#include <vector>

#include "slocore/core/types.h"

namespace slocore {

class IdIndex {
 public:
  // Empties the map for up to `expected` ids.
  void clear(size_t expected) {
    if (2 * expected > slots_.size()) {
      size_t n = 64;
      while (n < 2 * expected) n *= 2;
      slots_.assign(n, Slot{});
      shift_ = 64 - __builtin_ctzll(n);
      gen_ = 0;
    }
    if (++gen_ == 0) {  // the stamp wrapped: every slot is reset once
      slots_.assign(slots_.size(), Slot{});
      gen_ = 1;
    }
    size_ = 0;
  }
  // The value stored for id, or nullptr.
  const int64_t* find(Id id) const {
    if (slots_.empty()) return nullptr;
    const size_t mask = slots_.size() - 1;
    for (size_t i = slot(id);; i = (i + 1) & mask) {
      const Slot& s = slots_[i];
      if (s.gen != gen_) return nullptr;
      if (s.key == id) return &s.value;
    }
  }
  bool contains(Id id) const { return find(id) != nullptr; }
  // Stores id -> value unless id is present (then returns false and keeps the first value).
  bool insert(Id id, int64_t value) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    const size_t mask = slots_.size() - 1;
    for (size_t i = slot(id);; i = (i + 1) & mask) {
      Slot& s = slots_[i];
      if (s.gen != gen_) {
        s = Slot{id, value, gen_};
        ++size_;
        return true;
      }
      if (s.key == id) return false;
    }
  }

 private:
  struct Slot {
    Id key = 0;
    int64_t value = 0;
    uint32_t gen = 0;
  };
  size_t slot(Id id) const { return size_t((uint64_t(id) * 0x9E3779B97F4A7C15ull) >> shift_); }
  void grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    const uint32_t g = gen_;
    clear(old.empty() ? 32 : old.size());  // twice the slots
    for (const Slot& s : old)
      if (s.gen == g) insert(s.key, s.value);
  }
  std::vector<Slot> slots_;
  int shift_ = 64;
  uint32_t gen_ = 0;
  size_t size_ = 0;
};

}  // namespace slocore
