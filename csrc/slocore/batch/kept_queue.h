// An engine's waiting queue kept across the engine's calls in a scheduler's own order, with
// each request's position in the queue (batch/queue_positions.h), so that a plan reads
// the few waiting requests it takes, not the whole queue. The view changes between calls as
// batch/kept_order.h says; per call the queue reads the running requests, the queue's new
// front (preempted) and its new tail (arrivals).
#pragma once
#include <cstdint>
#include <set>
#include <vector>

#include "slocore/batch/kept_order.h"
#include "slocore/batch/queue_positions.h"

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
  template <class Make>
  bool follow(const InstanceView& v, Make&& make) {
    const bool follows = calls_.next(v);
    if (v.epoch == 0) {
      synced_ = false;
    } else if (!(synced_ && follows && sync(v, make))) {
      rebuild(v, make);
    }
    return synced_;
  }
  // Not followed this call (a view the caller does not keep): the next follow reads the queue whole.
  void forget() {
    synced_ = false;
    if (kept_.empty()) return;
    kept_.clear();
    order_.clear();
  }
  // After the plan of a followed view: the running requests the next call's view changes from.
  void planned(const InstanceView& v) {
    last_running_.clear();
    if (synced_)
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
  const std::set<Key>& order() const { return order_; }
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
    positions_.reset(n);
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
  std::set<Key> order_;
  QueuePositions positions_;
  size_t waiting_ = 0;  // kept waiting requests: the view's queue up to its new tail
  std::vector<Id> last_running_, preempted_;
  bool synced_ = false;
  EngineCalls calls_;
};

}  // namespace slocore
