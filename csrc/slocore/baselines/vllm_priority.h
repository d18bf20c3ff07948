// vllm_priority: vLLM V1's scheduler with `--scheduling-policy priority`
// (vllm/v1/core/sched/scheduler.py, Scheduler.schedule; docs/baselines.md). One iteration:
//  1. running requests, in running order, each get their next step (a decode token or the
//     next prefill chunk) into the token budget (vLLM's max_num_batched_tokens);
//  2. when KV blocks run out, the running request with the largest (priority, arrival) is
//     preempted (recompute); when that is the request being scheduled, the running pass stops;
//  3. only when nothing was preempted, waiting requests are admitted in (priority, arrival)
//     order (vLLM's priority heap), chunked into the budget, stopping at the first that
//     does not fit.
// Deviation: vLLM may also un-schedule a victim planned earlier in the same pass; here the
// victim is the lowest-priority running request not yet planned (PlanBuilder plans are
// append-only).
#pragma once
#include <vector>

#include "slocore/batch/plan_builder.h"

namespace slocore {

struct VllmPriorityParams {
  Tokens token_budget = 0;  // 0: the engine's max_batch_tokens (vLLM's max_num_batched_tokens)
  template <class V>
  void visit(V& v) {
    v.field("token_budget", token_budget, "tokens per iteration; 0 = the engine's max_batch_tokens",
            Range::at_least(0));
  }
};

// Steps 1-2: the running pass over `run` in `order`, preempting from the back of the vector
// `victims()` returns (those not yet planned), called only when the KV first runs out (most
// iterations preempt nothing, and their victims' sort is then never made).
// `on_turn(i, tokens)` after request i's turn with the budget tokens it took; `want(i)`: the
// tokens request i asks for (0: it sits this pass out; vLLM's own: one decode token or the
// whole remaining prefill, the overload below). Returns whether anything was preempted.
// Shared with stack/slo_triage.
template <class Victims, class OnTurn, class Want>
bool vllm_running_pass(PlanBuilder& b, const RunningBatch& run, const std::vector<size_t>& order, Victims victims_of,
                       OnTurn on_turn, Want want) {
  std::vector<size_t> victims;
  bool made = false;
  bool preempted = false;
  for (size_t i : order) {
    if (b.planned(run[i].request.id)) continue;  // preempted earlier in this pass
    if (b.budget_left() <= 0 || b.seq_full()) break;
    const Tokens before = b.budget_left();
    const Tokens w = want(i);
    if (w <= 0) continue;
    bool stop = false;
    while (b.add(run[i], true, w, true) == 0) {
      if (!made) victims = victims_of(), made = true;
      while (!victims.empty() && b.planned(run[victims.back()].request.id)) victims.pop_back();
      if (victims.empty()) {
        stop = true;
        break;
      }
      const size_t victim = victims.back();
      victims.pop_back();
      b.preempt(run[victim]);
      preempted = true;
      if (victim == i) {  // it was the last victim itself: no more to preempt
        stop = true;
        break;
      }
    }
    on_turn(i, before - b.budget_left());
    if (stop) break;
  }
  return preempted;
}

template <class Victims, class OnTurn>
bool vllm_running_pass(PlanBuilder& b, const RunningBatch& run, const std::vector<size_t>& order, Victims victims,
                       OnTurn on_turn) {
  return vllm_running_pass(b, run, order, std::move(victims), on_turn,
                           [&](size_t i) { return run[i].in_prefill() ? run[i].to_compute() : Tokens(1); });
}

class VllmPriorityScheduler : public BatchScheduler {
 public:
  explicit VllmPriorityScheduler(VllmPriorityParams p = {}) : token_budget_(p.token_budget) {}
  std::string name() const override { return "vllm_priority"; }
  ParamMap params() const override { return write_params(VllmPriorityParams{token_budget_}); }
  BatchPlan schedule(const InstanceView& v, Time now) override;

 private:
  Tokens token_budget_;  // 0: the engine's max_batch_tokens
};

}  // namespace slocore
