// A view's running requests sorted by a scheduler's key, ties in running order (what a
// stable sort of `running` by that key gives), kept across an engine's calls. Between calls
// a running request keeps its place relative to the others (admissions are appended,
// preemptions and departures leave the rest in order; batch/kept_order.h), and EDF's key,
// the next token's deadline, changes only for the requests that got a token. So each call
// sorts only the requests whose key changed and the newly admitted ones, and merges them into
// the last call's order: O(running + k log k) where the sort was O(running log running), a
// quarter of an EDF burst (docs/simulator.md). A view no engine makes (requests out of order,
// an id twice) only costs more sorting, never a wrong order.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <utility>
#include <vector>

#include "slocore/core/instance_view.h"

namespace slocore {

class RunningOrder {
 public:
  // Sorts v.running by key(s) (a double); false, keeping nothing, on a NaN key (no strict
  // weak order).
  template <class Key>
  bool update(const InstanceView& v, Key&& key) {
    const size_t n = v.running.size(), last_n = ids_.size();
    fresh_.clear();
    next_at_.assign(last_n, kGone);
    last_ids_.swap(ids_), last_keys_.swap(keys_), last_orders_.swap(orders_);
    ids_.resize(n), keys_.resize(n), orders_.resize(n);
    // Match v.running against the last call's running requests in one walk: the requests
    // still running keep their relative order; one found nowhere ahead is new, with the next
    // order, and so is every one after it (requests are admitted at the end). A view that
    // breaks this sorts more: the orders given still ascend along v.running.
    size_t p = 0;
    for (size_t i = 0; i < n; ++i) {
      const Id id = v.running[i].request.id;
      const double k = key(v.running[i]);
      if (std::isnan(k)) return clear(), false;
      ids_[i] = id, keys_[i] = k;
      size_t q = p;
      while (q < last_n && last_ids_[q] != id) ++q;
      if (q < last_n) {
        p = q + 1;
        orders_[i] = last_orders_[q];
        if (last_keys_[q] == k) {
          next_at_[q] = i;
          continue;
        }
      } else {
        p = last_n;  // the rest are new too: orders keep ascending along v.running
        orders_[i] = next_order_++;
      }
      Entry& f = fresh_.emplace_back();
      f.key = k, f.order = orders_[i], f.index = i;
    }
    // The last order without the requests that left or changed, merged with the fresh ones.
    // (Written field by field into sized vectors: a braced temporary pushed back made GCC
    // store the fields apart and load them as one, a store-forwarding stall per element.)
    size_t m = 0;
    for (Entry& e : sorted_)
      if (const size_t i = next_at_[e.index]; i != kGone) {
        Entry& x = sorted_[m++];  // compacted in place, m <= the entry read
        x.key = e.key, x.order = e.order, x.index = i;
      }
    sorted_.resize(m);
    std::sort(fresh_.begin(), fresh_.end());
    merged_.resize(m + fresh_.size());
    std::merge(sorted_.begin(), sorted_.end(), fresh_.begin(), fresh_.end(), merged_.begin());
    sorted_.swap(merged_);
    out_.resize(sorted_.size());
    for (size_t j = 0; j < sorted_.size(); ++j) out_[j].first = sorted_[j].key, out_[j].second = sorted_[j].index;
    return true;
  }
  // (key, index in v.running) of the last update's view, in order.
  const std::vector<std::pair<double, size_t>>& sorted() const { return out_; }
  void clear() {
    ids_.clear(), keys_.clear(), orders_.clear();
    sorted_.clear();
    out_.clear();
  }

 private:
  static constexpr size_t kGone = size_t(-1);
  struct Entry {
    double key = 0.0;
    uint64_t order = 0;  // running order: admissions count up
    size_t index = 0;    // in the last update's v.running
    bool operator<(const Entry& o) const { return key != o.key ? key < o.key : order < o.order; }
  };

  // The last update's v.running, in order, and this one's (built from them).
  std::vector<Id> ids_, last_ids_;
  std::vector<double> keys_, last_keys_;
  std::vector<uint64_t> orders_, last_orders_;
  std::vector<size_t> next_at_;  // last update's index -> this one's, kGone when left or changed
  std::vector<Entry> sorted_, merged_, fresh_;
  std::vector<std::pair<double, size_t>> out_;
  uint64_t next_order_ = 0;
};

}  // namespace slocore
