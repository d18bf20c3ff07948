// The running side of a scheduler that keeps its waiting order across an engine's calls (EDF,
// SlideBatching): from the last call's view to this one as the engine changes it between calls
// (sim/engine.cc), the plan's waiting requests move to the end of `running`, its preempted ones
// to the front of `waiting` (in running order), finished, handed-off and cancelled ones leave
// (on_finished), arrivals are appended.
#pragma once
#include <cstdint>
#include <vector>

#include "slocore/core/id_slab.h"
#include "slocore/core/instance_view.h"

namespace slocore {

// One engine's calls to a scheduler that keeps state across them: counts the calls (MLFQ marks
// the running requests it finds with the count) and says whether a call's view is the next
// state of the last call's: the same view object with a new epoch (0: not an engine's view).
class EngineCalls {
 public:
  // Counts this call; true when v follows the last call's view.
  bool next(const InstanceView& v) {
    ++count_;
    const bool follows = v.epoch != 0 && &v == last_view_ && v.epoch != last_epoch_;
    last_view_ = &v;
    last_epoch_ = v.epoch;
    return follows;
  }
  uint64_t count() const { return count_; }

 private:
  const InstanceView* last_view_ = nullptr;
  uint64_t last_epoch_ = 0, count_ = 0;
};

// Follows the running requests from the last call's (`last_running`, in order) to v's: one
// kept as waiting was admitted: `admit(id, kept)` takes it out of the scheduler's waiting
// order (and sets it running). The last call's running requests that are not running now and
// still kept were preempted: they must be the queue's new front, in running order; their ids
// go to `preempted`. One walk along both lists, as the engine keeps running requests in
// order and appends admissions: a request found ahead in last_running is still running and
// is not looked up (the lookups, each a cache miss in a burst's thousands of kept requests,
// were most of EDF's time there); O(running + last_running) whatever the view. False when
// the view is not such a change (checked where it is cheap: an unknown running id, one
// running twice or out of order, a preempted request not at the front).
template <class Kept, class Admit>
bool follow_running(const InstanceView& v, IdSlab<Kept>& kept, const std::vector<Id>& last_running, Admit&& admit,
                    std::vector<Id>& preempted) {
  preempted.clear();
  auto left = [&](Id id) {  // a last call's running request not running now
    const Kept* f = kept.find(id);
    if (!f || !f->running) return true;  // finished (forgotten) or never kept as running
    if (preempted.size() >= v.waiting.size() || v.waiting[preempted.size()].request.id != id) return false;
    preempted.push_back(id);
    return true;
  };
  size_t p = 0;
  const size_t n = last_running.size();
  bool admitting = false;  // past the first admission every running request must be one
  for (const RequestState& s : v.running) {
    const Id id = s.request.id;
    size_t q = p;
    while (!admitting && q < n && last_running[q] != id) ++q;
    if (!admitting && q < n) {
      for (; p < q; ++p)
        if (!left(last_running[p])) return false;
      p = q + 1;
      continue;
    }
    admitting = true;
    Kept* f = kept.find(id);  // admitted since the last call
    if (!f || f->running) return false;
    admit(id, *f);
  }
  for (; p < n; ++p)
    if (!left(last_running[p])) return false;
  return true;
}

}  // namespace slocore
