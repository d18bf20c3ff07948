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

// One engine's calls to a scheduler that keeps state across them: counts the calls (the mark
// follow_running leaves on running requests) and says whether a call's view is the next
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

// Marks every running request of `v` seen in call `call`; one kept as waiting was admitted:
// `admit(id, kept)` takes it out of the scheduler's waiting order (and sets it running). Then
// the last call's running requests that are not running now were preempted: they must be the
// queue's new front, in running order; their ids go to `preempted`. False when the view is not
// such a change (checked where it is cheap: an unknown or repeated running id, a preempted
// request not at the front).
template <class Kept, class Admit>
bool follow_running(const InstanceView& v, IdSlab<Kept>& kept, const std::vector<Id>& last_running, uint64_t call,
                    Admit&& admit, std::vector<Id>& preempted) {
  for (const RequestState& s : v.running) {
    Kept* f = kept.find(s.request.id);
    if (!f || f->seen == call) return false;
    f->seen = call;
    if (!f->running) admit(s.request.id, *f);
  }
  preempted.clear();
  for (Id id : last_running) {
    const Kept* f = kept.find(id);
    if (!f || f->seen == call || !f->running) continue;
    if (preempted.size() >= v.waiting.size() || v.waiting[preempted.size()].request.id != id) return false;
    preempted.push_back(id);
  }
  return true;
}

}  // namespace slocore
