// What a batch scheduler measures of its own instance from its events (schedule views and
// on_finished), with exponential decay of time constant `window_s`, each rate divided by the
// window seen so far (bias-corrected while younger than the window):
//  * the net rate at which KV blocks come free (blocks/s): the blocks of each request that
//    finishes (its context as last seen running) minus the blocks the running decodes take
//    (one each time a decode crosses a block boundary). 0 while nothing has finished.
//  * the share of the instance's time that arriving prefill work takes, per priority level:
//    each request's prefill time (the view's model, at first sight) when it first appears.
//    Under load, the requests of a level wait behind the work of higher levels that arrives
//    after them too (the priority queue's 1 / (1 - sigma) stretch).
#pragma once
#include <map>

#include "slocore/core/id_slab.h"
#include "slocore/core/instance_view.h"

namespace slocore::stack {

class InstanceRates {
 public:
  explicit InstanceRates(double window_s) : window_s_(window_s) {}
  // At each schedule call: new requests' prefill work, running requests' blocks, decode growth.
  void observe(const InstanceView& v, Time now);
  // The request left the engine: its blocks come free (none if it was never seen running).
  void finished(Id id, Time now);
  double kv_release_rate(Time now);
  // Share of the time taken by arriving prefill work of levels above `priority` (lower numbers).
  double busy_above(int priority, Time now);
  static constexpr size_t kKeepAtLeast = 4096;  // requests remembered before unreported ones are forgotten

 private:
  void decay(Time now);
  double seen_s(Time now) const;
  double window_s_;
  IdSlab<int64_t> known_;             // requests on the engine -> blocks when last seen running
  std::map<int, double> work_;        // decayed prefill seconds arrived, per priority level
  double freed_ = 0.0, taken_ = 0.0;  // decayed block counts
  Time t_ = -1.0, t0_ = -1.0;         // last decay, first event
};

}  // namespace slocore::stack
