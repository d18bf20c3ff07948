// An index from a 64-bit key to a 32-bit value (a slab slot, or nothing for a set): open
// addressing with linear probing in a power-of-two table at most half full, and
// backward-shift deletion (no tombstones). One probe per lookup where a node-based
// std::unordered_map takes a division and two dependent loads; the simulator's engines and
// prefix caches look keys up on every iteration. Keys that are mixed already (chained block
// hashes) pick their home slot by their low bits; small consecutive integers (request ids)
// are mixed first (Fibonacci hashing).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace slocore {

enum class KeyBits { Mixed, Sequential };

template <KeyBits kBits>
class FlatIndex {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;  // "absent"; never stored as a value

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // The value stored for key, kNone when absent.
  uint32_t find(uint64_t key) const {
    if (slots_.empty()) return kNone;
    for (size_t i = home(key);; i = next(i)) {
      const Slot& s = slots_[i];
      if (s.value == kNone) return kNone;
      if (s.key == key) return s.value;
    }
  }
  bool contains(uint64_t key) const { return find(key) != kNone; }
  // Stores key -> value (value != kNone) when key is absent and returns kNone; otherwise
  // stores nothing and returns the value already there.
  uint32_t insert(uint64_t key, uint32_t value) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    size_t i = home(key);
    for (; slots_[i].value != kNone; i = next(i))
      if (slots_[i].key == key) return slots_[i].value;
    slots_[i] = Slot{key, value};
    ++size_;
    return kNone;
  }
  // Removes key; false when absent.
  bool erase(uint64_t key) {
    if (slots_.empty()) return false;
    size_t hole = home(key);
    for (;; hole = next(hole)) {
      if (slots_[hole].value == kNone) return false;
      if (slots_[hole].key == key) break;
    }
    // Entries after the hole whose home lies cyclically outside (hole, j] move into it.
    for (size_t j = next(hole); slots_[j].value != kNone; j = next(j)) {
      const size_t h = home(slots_[j].key);
      const bool stays = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j);
      if (!stays) slots_[hole] = slots_[j], hole = j;
    }
    slots_[hole] = Slot{};
    --size_;
    return true;
  }
  void clear() {
    slots_.assign(slots_.size(), Slot{});
    size_ = 0;
  }
  // Calls f(key, value) for every entry, in table order.
  template <class F>
  void for_each(F&& f) const {
    for (const Slot& s : slots_)
      if (s.value != kNone) f(s.key, s.value);
  }

 private:
  struct Slot {
    uint64_t key = 0;
    uint32_t value = kNone;
  };
  size_t home(uint64_t key) const {
    if constexpr (kBits == KeyBits::Sequential) return size_t((key * 0x9E3779B97F4A7C15ull) >> shift_);
    return size_t(key) & (slots_.size() - 1);
  }
  size_t next(size_t i) const { return (i + 1) & (slots_.size() - 1); }
  void grow() {
    std::vector<Slot> old(slots_.empty() ? 64 : 2 * slots_.size());
    old.swap(slots_);
    shift_ = 64 - __builtin_ctzll(slots_.size());
    for (const Slot& s : old) {
      if (s.value == kNone) continue;
      size_t i = home(s.key);
      while (slots_[i].value != kNone) i = next(i);
      slots_[i] = s;
    }
  }

  std::vector<Slot> slots_;
  int shift_ = 64;  // Sequential keys: the top log2(size) bits of the product
  size_t size_ = 0;
};

}  // namespace slocore
