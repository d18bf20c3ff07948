// A view's running requests in a scheduler's order by a key (a double; ties in running order,
// what a stable sort of `running` by the key gives), kept across an engine's calls, with each
// request's position in `running` (batch/queue_positions.h). An engine that reports its
// changes (InstanceView::changes) is followed by them: per call the preempted requests
// leave, the admitted ones join at the back, and only those that progressed get their key
// again (EDF's key, the next token's deadline, moves only with a token), so a plan reads the
// running requests it takes, from either end of the order, and never the batch: a call costs
// O(changes x log running) lookups and one pass over the order's compact entries, where a
// walk and a sort read every running request, most of an EDF burst (docs/simulator.md).
// Any other view is read whole.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "slocore/batch/queue_positions.h"
#include "slocore/core/id_slab.h"
#include "slocore/core/instance_view.h"

namespace slocore {

class KeptRunning {
 public:
  struct Entry {
    double key = 0.0;
    int64_t seq = 0;  // running order (admissions count up): the tie-break and the position
    Id id = 0;
    bool operator<(const Entry& o) const { return key != o.key ? key < o.key : seq < o.seq; }
  };

  // Follows v by its changes when `by_changes` (the view is the next state of the last call's,
  // as KeptQueue::followed_changes() says), else reads v.running whole. False, keeping
  // nothing, on a NaN key (no strict weak order) or a view that disagrees with its changes.
  template <class Key>
  bool follow(const InstanceView& v, bool by_changes, Key&& key) {
    if (by_changes && synced_ && apply(v, key)) return true;
    return rebuild(v, key);
  }
  // A request left the engine (finished, handed off, cancelled).
  void finished(Id id) {
    const Entry* e = synced_ ? kept_.find(id) : nullptr;
    if (!e) return;
    order_.erase(order_.begin() + std::ptrdiff_t(at_in_order(*e)));
    at_.remove(e->seq);
    kept_.erase(id);
  }
  void forget() {
    synced_ = false;
    order_.clear();
    kept_.clear();
  }
  // The running requests in order (sorted); their states by find().
  const std::vector<Entry>& order() const { return order_; }
  // The running request of v an entry names, by its position; nullptr when v disagrees (then
  // the next follow reads v whole; the order stays valid to walk until then).
  const RequestState* find(const InstanceView& v, const Entry& e) {
    const size_t i = at_.rank(e.seq);
    if (i < v.running.size() && v.running[i].request.id == e.id) return &v.running[i];
    synced_ = false;
    return nullptr;
  }

 private:
  template <class Key>
  bool rebuild(const InstanceView& v, Key& key) {
    forget();
    fresh_.clear();
    const int64_t n = int64_t(v.running.size());
    at_.reset(0, n + 1024);  // slots for the admissions of the next calls
    for (int64_t i = 0; i < n; ++i)
      if (!add(v.running[size_t(i)], key)) return forget(), false;
    std::sort(fresh_.begin(), fresh_.end());
    order_.swap(fresh_);
    return synced_ = true;
  }
  // The changes in one pass over the order (24-byte entries, no request read) that drops the
  // entries of the preempted and progressed requests (their old entries, sorted, met in the
  // same order) and merges in the new ones, sorted. Each preempted request must be kept, each
  // admitted one new.
  template <class Key>
  bool apply(const InstanceView& v, Key& key) {
    const ViewChanges& c = v.changes;
    fresh_.clear();
    stale_.clear();
    for (Id id : c.preempted) {
      const Entry* e = kept_.find(id);
      if (!e) return false;
      stale_.push_back(*e);
      at_.remove(e->seq);
      kept_.erase(id);
    }
    if (c.admitted.size() > v.running.size()) return false;
    const size_t back = v.running.size() - c.admitted.size();
    for (size_t j = 0; j < c.admitted.size(); ++j) {
      const RequestState& s = v.running[back + j];
      if (s.request.id != c.admitted[j]) return false;
      if (at_.slot(at_.back()) >= at_.slots() || !add(s, key)) return false;  // slots used up: renumber
    }
    for (Id id : c.progressed) {
      Entry* e = kept_.find(id);
      if (!e) return false;
      const RequestState* s = find(v, *e);
      if (!s) return false;
      const double k = key(*s);
      if (std::isnan(k)) return false;
      if (k == e->key) continue;  // a prefill chunk, or admitted above
      stale_.push_back(*e);
      e->key = k;
      fresh_.push_back(*e);
    }
    if (order_.size() - stale_.size() + fresh_.size() != v.running.size()) return false;
    std::sort(stale_.begin(), stale_.end());
    std::sort(fresh_.begin(), fresh_.end());
    merged_.clear();
    auto gone = stale_.cbegin();
    auto in = fresh_.cbegin();
    for (const Entry& e : order_) {
      if (gone != stale_.cend() && gone->seq == e.seq) {  // stale_ is a sorted subset of order_
        ++gone;
        continue;
      }
      for (; in != fresh_.cend() && *in < e; ++in) merged_.push_back(*in);
      merged_.push_back(e);
    }
    merged_.insert(merged_.end(), in, fresh_.cend());
    order_.swap(merged_);
    return true;
  }
  // Keeps s as running, its entry in fresh_ (not yet in order_).
  template <class Key>
  bool add(const RequestState& s, Key& key) {
    const Entry e{key(s), at_.take_back(), s.request.id};
    if (std::isnan(e.key) || !kept_.emplace(e.id, e)) return false;
    fresh_.push_back(e);
    at_.add(e.seq);
    return true;
  }
  size_t at_in_order(const Entry& e) const {  // e is in order_ (every kept entry is, between calls)
    return size_t(std::lower_bound(order_.begin(), order_.end(), e) - order_.begin());
  }

  std::vector<Entry> order_;           // sorted
  std::vector<Entry> fresh_, merged_;  // apply()'s scratch
  std::vector<Entry> stale_;           // apply()'s scratch: the entries of order_ to drop
  IdSlab<Entry> kept_;                 // id -> its entry (as in order_)
  QueuePositions at_;                  // seq -> position in `running`
  bool synced_ = false;
};

}  // namespace slocore
