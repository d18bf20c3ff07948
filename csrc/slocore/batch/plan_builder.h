// Builds a feasible BatchPlan (the contract in batch_scheduler.h): token budget, sequence
// limit and KV blocks are accounted in one place, so each scheduler is only its ordering.
#pragma once
#include <functional>
#include <vector>

#include "slocore/batch/batch_scheduler.h"
#include "slocore/core/id_index.h"

namespace slocore {

class PlanBuilder {
 public:
  PlanBuilder(const InstanceView& v, Tokens token_budget);
  ~PlanBuilder();
  PlanBuilder(const PlanBuilder&) = delete;
  PlanBuilder& operator=(const PlanBuilder&) = delete;

  // Schedules up to `want` tokens of s (capped by to_compute()); with `allow_partial` a
  // prefill may get a smaller chunk that fits the budget. Returns the tokens scheduled.
  Tokens add(const RequestState& s, bool running, Tokens want, bool allow_partial);
  // The next step of s: one decode token, or its prefill (chunked when allow_partial).
  Tokens add_next(const RequestState& s, bool running, bool allow_partial);
  void preempt(const RequestState& s);  // frees its KV for this plan
  bool planned(Id id) const;
  size_t planned_count() const { return plan_.items.size(); }
  bool seq_full() const { return int(plan_.items.size()) >= view_.max_num_seqs; }
  Tokens budget_left() const { return budget_; }
  int64_t blocks_left() const { return blocks_; }
  BatchPlan take() { return std::move(plan_); }
  const InstanceView& view() const { return view_; }

 private:
  const InstanceView& view_;
  Tokens budget_;
  int64_t blocks_;
  BatchPlan plan_;
  IdIndex ids_;  // planned or preempted (the value is unused); a finished builder's, reused
};

// A plan whose iteration ended gives its storage to the next PlanBuilder of the thread: a
// plan per engine iteration took an allocation or two and their frees (with malloc's other
// callers, 3.4% of an EDF burst before, 1.5% after; docs/simulator.md).
void recycle(BatchPlan&& spent);

// Runs the next step (decode token or prefill chunk) of the running request s; when it does
// not fit in KV, preempts the running requests `victim()` gives (the next one not yet planned
// or preempted, taken; nullptr when none is left) until it fits, or preempts s when it is
// itself the next victim. vLLM's recompute policy.
template <class Victim>
void run_with_preemption(PlanBuilder& b, const RequestState& s, Victim&& victim) {
  if (b.planned(s.request.id)) return;
  while (b.add_next(s, true, true) == 0 && !b.seq_full() && b.budget_left() > 0) {
    const RequestState* x = victim();
    if (!x) break;
    b.preempt(*x);
    if (x == &s) break;  // it is the newest: it yields its own KV (vLLM)
  }
}

// The above for every running request in `order` (indices into view.running), the victims
// taken from the back of `victims`. `victims` is consumed from the back: it loses only
// requests already planned or preempted, which every later call skips anyway, so one list
// serves every call of a plan (a copy per call was an EDF burst's largest allocation).
void run_with_preemption(PlanBuilder& b, const std::vector<size_t>& order, std::vector<size_t>& victims);
// The same for the one running request `i`.
void run_with_preemption(PlanBuilder& b, size_t i, std::vector<size_t>& victims);

// One step a scheduler may plan: a running request (index into view.running) or a waiting one.
struct Candidate {
  const RequestState* s;
  bool running;
  size_t index;
};

// Plans `order` until the batch is full: running candidates with run_with_preemption
// against `victims`, waiting ones chunked into the budget; then ensure_progress.
void plan_in_order(PlanBuilder& b, const std::vector<Candidate>& order, std::vector<size_t> victims);

// No livelock: if nothing was planned but requests are running (e.g. partial prefills hold
// all KV), the oldest runs and the newest yield their KV.
void ensure_progress(PlanBuilder& b);

}  // namespace slocore
