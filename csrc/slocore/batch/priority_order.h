// Waiting requests handed out by (priority, arrival), or by (priority, a group and a time the
// caller gives), ties in the order they were pushed (queue order): vLLM's priority order. A list
// pushed in that order already is read as it is; one that is not is ordered lazily
// (order_lazily): a heap of the keys hands out the next request in O(log n), so an admission
// pass that stops at the first request that does not fit orders only the few it takes, not
// the whole queue.
#pragma once
#include <algorithm>
#include <cstddef>
#include <tuple>
#include <utility>
#include <vector>

#include "slocore/core/instance_view.h"

namespace slocore {

class PriorityArrivalOrder {
 public:
  void push(const RequestState& s) { push(s, 0, s.request.arrival); }
  // By (priority, group, t) instead: a scheduler's own place within a level (slo_triage's handoffs).
  void push(const RequestState& s, int group, Time t) {
    items_.push_back({{s.request.priority, group, t}, items_.size(), &s});
  }
  void clear() { items_.clear(); }
  void order_lazily() {
    lazy_ = true;
    std::make_heap(items_.begin(), items_.end(), After{});
  }
  bool empty() const { return next_ == items_.size(); }
  const RequestState* next() {
    if (!lazy_) return items_[next_++].s;
    const auto heap_end = items_.end() - std::ptrdiff_t(next_++);  // the heap; handed out ones behind it
    std::pop_heap(items_.begin(), heap_end, After{});
    return (heap_end - 1)->s;
  }

 private:
  struct Item {
    std::tuple<int, int, Time> key;
    size_t pos;  // in push order
    const RequestState* s;
  };
  struct After {  // the heap's "less": later in (key, push order), so the first is on top
    bool operator()(const Item& a, const Item& c) const { return std::tie(a.key, a.pos) > std::tie(c.key, c.pos); }
  };
  std::vector<Item> items_;
  bool lazy_ = false;
  size_t next_ = 0;  // handed out so far
};

}  // namespace slocore
