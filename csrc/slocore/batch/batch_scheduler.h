// Local batch scheduler contract: which requests run in the next engine iteration, with
// how many tokens each, given the engine's queue (its view), its latency model and `now`.
// A prefill item's tokens are a prompt chunk; a decode item's are 1.
//
// The event contract. One engine model (sim/engine.cc) makes these calls, in the simulator
// and in the emulated engine of `slocore serve` alike (serve/engine.py steps the same C++
// engine, paced by real time):
// * schedule(engine, now): when the engine is idle and has work, at `now` (the end of the
//   previous iteration, or the arrival that woke it). The view says what the engine changed
//   in it since the last call (InstanceView::changes: preempted, admitted and progressed
//   requests), so a scheduler that keeps state reads those and not the batch
//   (batch/kept_queue.h, batch/kept_running.h). The plan is then sanitised: unknown,
//   duplicate or infeasible items (over the token budget, max_num_seqs or free KV) and
//   preemptions of requests that are not running are dropped and counted as violations;
//   preempted requests lose their KV and go back to the head of the waiting queue.
// * on_batch_done(engine, plan, predicted_s, actual_s, now): at the end of each iteration,
//   `now` = its end, with the sanitised plan, the view model's prediction and the truth
//   duration, after the view's online correction (ProServe 4.1) saw the same pair and
//   before the tokens of the iteration are emitted.
// * on_finished(id, now): a request left the engine: its last token (or, on a P/D prefill
//   instance, its handoff) in this iteration, or it was cancelled (the client went away).
//   Request ids are the engine's own.
#pragma once
#include <memory>
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
  // Called when the iteration ends, with what the view's model predicted and the truth.
  virtual void on_batch_done(const InstanceView& engine, const BatchPlan& plan, double predicted_s, double actual_s,
                             Time now) {}
  virtual void on_finished(Id request, Time now) {}

  // True for a scheduler make_batch_scheduler() built (every built-in one): it keeps state of
  // its own engine only, so the simulator may step engines that can no longer interact ahead
  // of the event loop (sim/simulator.cc, "engines run ahead"). A scheduler of yours, which may
  // share state across engines, is always called in the event loop's order.
  bool engine_local() const { return engine_local_; }

 private:
  friend std::shared_ptr<BatchScheduler> make_batch_scheduler(const std::string& name, const ParamMap& params);
  bool engine_local_ = false;
};

}  // namespace slocore
