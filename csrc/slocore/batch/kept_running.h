// A view's running requests in a scheduler's order by a key (a double; ties in running order,
// what a stable sort of `running` by the key gives), kept across an engine's calls, with each
// request's position in `running` (batch/queue_positions.h). An engine that reports its
// changes (InstanceView::changes) is followed by them: per call the preempted requests
// leave, the admitted ones join, and only those that progressed get their key again (EDF's
// key, the next token's deadline, moves only with a token), each an erase and an insert in
// sorted blocks (core/sorted_blocks.h); a plan reads the running requests it takes, from
// either end of the order, and never the batch: a call costs O(changes x log running), where
// a walk and a sort read every running request, most of an EDF burst, and a sorted vector
// took a pass over its entries per call (docs/simulator.md). Any other view is read whole.
#pragma once
#include <cmath>
#include <cstdint>

#include "slocore/batch/queue_positions.h"
#include "slocore/core/id_slab.h"
#include "slocore/core/instance_view.h"
#include "slocore/core/sorted_blocks.h"

namespace slocore {

class KeptRunning {
 public:
  struct Entry {
    double key = 0.0;
    int64_t seq = 0;  // running order (admissions count up): the tie-break and the position
    Id id = 0;
    bool operator<(const Entry& o) const { return key != o.key ? key < o.key : seq < o.seq; }
  };
  // A few hundred running requests: blocks of 64 entries (1.5 KiB) keep an insert's move short.
  using Order = SortedBlocks<Entry, 64>;

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
    order_.erase(*e);
    at_.remove(e->seq);
    kept_.erase(id);
  }
  void forget() {
    synced_ = false;
    order_.clear();
    kept_.clear();
  }
  // The running requests in order (sorted); their states by find().
  const Order& order() const { return order_; }
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
    const int64_t n = int64_t(v.running.size());
    at_.reset(0, n + 1024);  // slots for the admissions of the next calls
    for (int64_t i = 0; i < n; ++i)
      if (!add(v.running[size_t(i)], key)) return forget(), false;
    return synced_ = true;
  }
  // The changes, each in place: the preempted requests' entries leave, the admitted ones'
  // join, a progressed request's entry moves when its key changed. Each preempted request
  // must be kept, each admitted one new.
  template <class Key>
  bool apply(const InstanceView& v, Key& key) {
    const ViewChanges& c = v.changes;
    for (Id id : c.preempted) {
      const Entry* e = kept_.find(id);
      if (!e) return false;
      order_.erase(*e);
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
      order_.erase(*e);
      e->key = k;
      order_.insert(*e);
    }
    return order_.size() == v.running.size();
  }
  // Keeps s as running.
  template <class Key>
  bool add(const RequestState& s, Key& key) {
    const Entry e{key(s), at_.take_back(), s.request.id};
    if (std::isnan(e.key) || !kept_.emplace(e.id, e)) return false;
    order_.insert(e);
    at_.add(e.seq);
    return true;
  }

  Order order_;
  IdSlab<Entry> kept_;  // id -> its entry (as in order_)
  QueuePositions at_;   // seq -> position in `running`
  bool synced_ = false;
};

}  // namespace slocore
