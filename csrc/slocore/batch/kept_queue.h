// An engine's waiting queue kept across the engine's calls in a scheduler's own order, with
// each request's position in the queue (batch/queue_positions.h), so that a plan reads
// the few waiting requests it takes, not the whole queue. The view changes between calls as
// batch/kept_order.h says; per call the queue reads the queue's new front (preempted), its new
// tail (arrivals), and the requests the engine admitted (InstanceView::changes) or, from an
// engine that reports no changes, the running requests.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "slocore/batch/kept_order.h"
#include "slocore/batch/queue_positions.h"
#include "slocore/core/sorted_blocks.h"

namespace slocore {

// Key: the scheduler's order of waiting requests; has `int64_t seq` (queue order: the front's
// inserts count down, appends count up; set by the queue) and `Id id`, and an operator< that
// ends in seq, so that ties keep queue order.
template <class Key>
class KeptQueue {
 public:
  // Follows v from the last call's view, or reads it whole when v is not such a change (a
  // new view, a repeated epoch, a change follow_running refuses). `make(s, key)` fills the
  // key of a waiting request and says whether it can be kept. False when v's queue is not
  // kept (not an engine's view: epoch 0; a request `make` refuses; an id twice).
  // An engine that reports its changes (InstanceView::changes, since this queue's last call)
  // is followed by them: per call, the few requests the last plan moved, not the batch.
  template <class Make>
  bool follow(const InstanceView& v, Make&& make) {
    const bool follows = calls_.next(v);
    const bool by_changes = follows && v.changes.since_epoch != 0 && v.changes.since_epoch == last_epoch_;
    last_epoch_ = v.epoch;
    by_changes_ = false;
    if (v.epoch == 0) {
      synced_ = false;
    } else if (synced_ && by_changes) {
      by_changes_ = sync_changes(v, make);
      if (!by_changes_) rebuild(v, make);
    } else if (!(synced_ && follows && walkable_ && sync(v, make))) {
      rebuild(v, make);
    }
    return synced_;
  }
  // This call's follow applied the view's changes (a scheduler's running side may do the same).
  bool followed_changes() const { return synced_ && by_changes_; }
  // Not followed this call (a view the caller does not keep): the next follow reads the queue whole.
  void forget() {
    synced_ = false;
    if (kept_.empty()) return;
    kept_.clear();
    order_.clear();
  }
  // After the plan of a followed view: the running requests the next call's view changes from.
  // (Not needed, and not read, while the engine reports its changes.)
  void planned(const InstanceView& v) {
    last_running_.clear();
    walkable_ = synced_ && !by_changes_;
    if (walkable_)
      for (const RequestState& s : v.running) last_running_.push_back(s.request.id);
  }
  // A request left the engine (finished, handed off, cancelled).
  void finished(Id id) {
    const Kept* k = kept_.find(id);
    if (!k) return;
    if (synced_ && !k->running) remove_waiting(*k);
    kept_.erase(id);
  }
  // The waiting requests in the scheduler's order.
  const SortedBlocks<Key>& order() const { return order_; }
  // The waiting request of v with key k, by its position; nullptr when v disagrees (then the
  // queue is read whole at the next call).
  const RequestState* find(const InstanceView& v, const Key& k) {
    const size_t i = positions_.rank(k.seq);
    if (i < v.waiting.size() && v.waiting[i].request.id == k.id) return &v.waiting[i];
    synced_ = false;
    return nullptr;
  }

 private:
  struct Kept {
    Key key{};
    bool running = false;
  };

  template <class Make>
  void rebuild(const InstanceView& v, Make& make) {
    synced_ = false;
    kept_.clear();
    order_.clear();
    const int64_t n = int64_t(v.waiting.size());
    positions_.reset(n, std::max<int64_t>(1024, n));  // a rebuild per n preemptions at most
    waiting_ = 0;
    for (const RequestState& s : v.running)
      if (!kept_.emplace(s.request.id, Kept{Key{}, true})) return;  // an id twice
    for (int64_t i = 0; i < n; ++i)
      if (!add_waiting(v.waiting[size_t(i)], i, make)) return;
    synced_ = true;
  }

  template <class Make>
  bool sync(const InstanceView& v, Make& make) {
    auto admit = [&](Id, Kept& k) {
      remove_waiting(k);
      k.running = true;
    };
    if (!follow_running(v, kept_, last_running_, admit, preempted_)) return false;
    return take_front_and_tail(v, make);
  }
  // The preempted requests (preempted_, the queue's new front) and the arrivals kept.
  template <class Make>
  bool take_front_and_tail(const InstanceView& v, Make& make) {
    int64_t first = 0;
    if (!positions_.take_front(preempted_.size(), first)) return false;  // rebuild
    for (size_t j = 0; j < preempted_.size(); ++j) {                     // the queue's new front, in running order
      kept_.erase(preempted_[j]);
      if (!add_waiting(v.waiting[j], first + int64_t(j), make)) return false;
    }
    if (v.waiting.size() < waiting_) return false;
    for (size_t j = waiting_; j < v.waiting.size(); ++j)  // arrivals
      if (!add_waiting(v.waiting[j], positions_.take_back(), make)) return false;
    return true;
  }

  // sync() from the engine's list of changes: the admitted requests are the batch's new back,
  // the preempted ones the queue's new front (checked by id: a view that disagrees is read
  // whole).
  template <class Make>
  bool sync_changes(const InstanceView& v, Make& make) {
    const ViewChanges& c = v.changes;
    if (c.admitted.size() > v.running.size() || c.preempted.size() > v.waiting.size()) return false;
    const size_t back = v.running.size() - c.admitted.size();
    for (size_t j = 0; j < c.admitted.size(); ++j) {
      Kept* k = kept_.find(c.admitted[j]);
      if (v.running[back + j].request.id != c.admitted[j] || !k || k->running) return false;
      remove_waiting(*k);
      k->running = true;
    }
    preempted_.clear();
    for (size_t j = 0; j < c.preempted.size(); ++j) {
      const Kept* k = kept_.find(c.preempted[j]);
      if (v.waiting[j].request.id != c.preempted[j] || !k || !k->running) return false;
      preempted_.push_back(c.preempted[j]);
    }
    return take_front_and_tail(v, make);
  }

  template <class Make>
  bool add_waiting(const RequestState& s, int64_t seq, Make& make) {
    Key key{};
    if (!make(s, key)) return false;
    key.seq = seq;
    key.id = s.request.id;
    if (!kept_.emplace(key.id, Kept{key, false})) return false;
    order_.insert(key);
    positions_.add(seq);
    ++waiting_;
    return true;
  }
  void remove_waiting(const Kept& k) {
    order_.erase(k.key);
    positions_.remove(k.key.seq);
    --waiting_;
  }

  IdSlab<Kept> kept_;
  SortedBlocks<Key> order_;
  QueuePositions positions_;
  size_t waiting_ = 0;  // kept waiting requests: the view's queue up to its new tail
  std::vector<Id> last_running_, preempted_;
  bool synced_ = false;
  bool by_changes_ = false;  // the last follow applied the view's changes
  bool walkable_ = false;    // last_running_ holds the last call's running ids
  uint64_t last_epoch_ = 0;  // the view's epoch at the last call
  EngineCalls calls_;
};

}  // namespace slocore
