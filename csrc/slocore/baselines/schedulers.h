// Baseline local batch schedulers (one paragraph each in docs/baselines.md).
// (weighted_vtc and mlfq are in fair_baselines.h.)
//  vllm_fcfs        vLLM's classic scheduler (Kwon et al., SOSP'23): prefill-first; waiting
//                   requests are admitted FCFS with whole prompts, and an iteration that
//                   prefills does not decode; on KV shortage the newest running request is
//                   preempted (recompute).
//  orca             Orca (Yu et al., OSDI'22): iteration-level FCFS; every running request
//                   decodes each iteration and new requests join at iteration boundaries
//                   with their whole prompt in the same batch.
//  sarathi_fcfs     Sarathi-Serve (Agrawal et al., OSDI'24): decode-first, then chunked
//                   prefills FCFS into a per-iteration token budget (stall-free batching).
//  sarathi_priority Sarathi-Serve with prefills ordered by (priority, arrival) and the lowest
//                   priority preempted first (ProServe's Sarathi-Priority baseline).
//  edf              FairBatching-style earliest deadline first: every candidate step ordered
//                   by its next token deadline arrival + TTFT + generated*TPOT (ProServe Eq. 3).
#pragma once
#include <set>

#include "slocore/batch/kept_queue.h"
#include "slocore/batch/kept_running.h"
#include "slocore/batch/plan_builder.h"

namespace slocore {

struct VllmFcfsParams {
  bool chunked = false;
  template <class V>
  void visit(V& v) {
    v.field("chunked", chunked, "chunk prompts into the engine's batch token limit");
  }
};

// Sarathi, EDF: the per-iteration token budget (Sarathi's chunk).
struct TokenBudgetParams {
  Tokens token_budget = 512;
  template <class V>
  void visit(V& v) {
    v.field("token_budget", token_budget, "tokens per iteration (prefill chunks + decodes)", Range::at_least(1));
  }
};

class VllmFcfsScheduler : public BatchScheduler {
 public:
  explicit VllmFcfsScheduler(VllmFcfsParams p) : p_(p) {}
  std::string name() const override { return "vllm_fcfs"; }
  ParamMap params() const override { return write_params(p_); }
  BatchPlan schedule(const InstanceView& v, Time now) override;

 private:
  VllmFcfsParams p_;
};

class OrcaScheduler : public BatchScheduler {
 public:
  std::string name() const override { return "orca"; }
  BatchPlan schedule(const InstanceView& v, Time now) override;
};

class SarathiScheduler : public BatchScheduler {
 public:
  SarathiScheduler(TokenBudgetParams p, bool by_priority) : p_(p), by_priority_(by_priority) {
    check_params(p_, name());
  }
  std::string name() const override { return by_priority_ ? "sarathi_priority" : "sarathi_fcfs"; }
  ParamMap params() const override { return write_params(p_); }
  BatchPlan schedule(const InstanceView& v, Time now) override;

 private:
  TokenBudgetParams p_;
  bool by_priority_;
};

class EdfScheduler : public BatchScheduler {
 public:
  explicit EdfScheduler(TokenBudgetParams p) : p_(p) { check_params(p_, name()); }
  std::string name() const override { return "edf"; }
  ParamMap params() const override { return write_params(p_); }
  BatchPlan schedule(const InstanceView& v, Time now) override;
  void on_finished(Id request, Time now) override;
  static double next_deadline(const RequestState& s);

 private:
  BatchPlan schedule_sorted(const InstanceView& v);  // one full sort (NaN deadlines)
  BatchPlan schedule_heap(const InstanceView& v);    // every waiting deadline, a heap of them
  // The kept order (schedule()): an engine's waiting requests by (deadline, position),
  // followed across calls instead of recomputed (batch/kept_queue.h).
  struct WaitKey {
    double deadline = 0.0;  // of its next token (fixed while it waits)
    int64_t seq = 0;
    Id id = 0;
    bool operator<(const WaitKey& o) const { return deadline != o.deadline ? deadline < o.deadline : seq < o.seq; }
  };
  bool plan_kept(const InstanceView& v, BatchPlan& plan);

  TokenBudgetParams p_;
  std::vector<std::pair<double, size_t>> run_, wait_;  // schedule() scratch: (deadline, index)
  KeptQueue<WaitKey> kept_;
  KeptRunning running_;      // plan_kept's running requests by deadline, kept across calls
  bool never_kept_ = false;  // a NaN deadline was seen: no strict weak order to keep
};

}  // namespace slocore
