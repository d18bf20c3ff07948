// Local batch scheduler contract (docs/design.md "Contracts"): which requests run in the next
// engine iteration, with how many tokens each, given the engine's queue (its view), its
// latency model and `now`. A prefill item's tokens are a prompt chunk; a decode item's are 1.
#pragma once
#include <string>
#include <vector>

#include "slocore/core/instance_view.h"
#include "slocore/core/params.h"

namespace slocore {

struct ScheduledItem {
  Id request = 0;
  Tokens tokens = 1;
};

struct BatchPlan {
  std::vector<ScheduledItem> items;
  std::vector<Id> preempt;  // running requests to evict (their KV is freed, they re-queue)
  bool empty() const { return items.empty(); }
};

class BatchScheduler {
 public:
  virtual ~BatchScheduler() = default;
  virtual std::string name() const = 0;
  virtual ParamMap params() const { return {}; }
  virtual BatchPlan schedule(const InstanceView& engine, Time now) = 0;
  // Called when the iteration ends, with what the scheduler's model predicted and the truth.
  virtual void on_batch_done(const InstanceView& engine, const BatchPlan& plan,
                             double predicted_s, double actual_s, Time now) {}
  virtual void on_finished(Id request, Time now) {}
};

}  // namespace slocore
