// Indexed binary min-heap keyed by id: update and remove in O(log n). HFX Alg. 1 keeps its
// worker queue Q_W in one, ordered by maturity time; ties break on the smaller id so the
// order is deterministic.
#pragma once
#include <unordered_map>
#include <utility>
#include <vector>

#include "slocore/core/errors.h"
#include "slocore/core/types.h"

namespace slocore::hfx {

class IndexedHeap {
 public:
  bool empty() const { return h_.empty(); }
  size_t size() const { return h_.size(); }
  bool contains(Id id) const { return pos_.count(id) > 0; }
  // (id, key) of the minimum; the heap must not be empty.
  const std::pair<Id, double>& top() const { return h_.front(); }
  double key(Id id) const { return h_[index(id)].second; }

  // Inserts id or updates its key.
  void set(Id id, double key) {
    auto it = pos_.find(id);
    if (it == pos_.end()) {
      h_.emplace_back(id, key);
      pos_[id] = h_.size() - 1;
      up(h_.size() - 1);
      return;
    }
    const size_t i = it->second;
    const double old = h_[i].second;
    h_[i].second = key;
    if (less(h_[i], std::make_pair(id, old)))
      up(i);
    else
      down(i);
  }
  void erase(Id id) {
    auto it = pos_.find(id);
    if (it == pos_.end()) return;
    const size_t i = it->second;
    swap_at(i, h_.size() - 1);
    h_.pop_back();
    pos_.erase(id);
    if (i < h_.size()) {
      up(i);
      down(i);
    }
  }
  std::vector<std::pair<Id, double>> items() const { return h_; }

 private:
  static bool less(const std::pair<Id, double>& a, const std::pair<Id, double>& b) {
    return a.second != b.second ? a.second < b.second : a.first < b.first;
  }
  size_t index(Id id) const {
    auto it = pos_.find(id);
    if (it == pos_.end()) throw UnknownId("instance " + std::to_string(id) + ": not in the worker queue");
    return it->second;
  }
  void swap_at(size_t i, size_t j) {
    std::swap(h_[i], h_[j]);
    pos_[h_[i].first] = i;
    pos_[h_[j].first] = j;
  }
  void up(size_t i) {
    while (i > 0) {
      const size_t p = (i - 1) / 2;
      if (!less(h_[i], h_[p])) break;
      swap_at(i, p);
      i = p;
    }
  }
  void down(size_t i) {
    for (;;) {
      size_t m = i;
      const size_t l = 2 * i + 1, r = l + 1;
      if (l < h_.size() && less(h_[l], h_[m])) m = l;
      if (r < h_.size() && less(h_[r], h_[m])) m = r;
      if (m == i) break;
      swap_at(i, m);
      i = m;
    }
  }
  std::vector<std::pair<Id, double>> h_;
  std::unordered_map<Id, size_t> pos_;
};

}  // namespace slocore::hfx
