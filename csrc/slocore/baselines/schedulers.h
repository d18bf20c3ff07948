// Baseline local batch schedulers (issue 4; one paragraph each in docs/baselines.md).
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
#include "slocore/batch/plan_builder.h"

namespace slocore {

struct FcfsParams {
  Tokens token_budget = 512;  // Sarathi chunk / per-iteration token budget
  bool chunked = false;       // vllm_fcfs: chunked prefill
};

class VllmFcfsScheduler : public BatchScheduler {
 public:
  explicit VllmFcfsScheduler(FcfsParams p) : p_(p) {}
  std::string name() const override { return "vllm_fcfs"; }
  ParamMap params() const override { return {{"chunked", double(p_.chunked)}}; }
  BatchPlan schedule(const InstanceView& v, Time now) override;

 private:
  FcfsParams p_;
};

class OrcaScheduler : public BatchScheduler {
 public:
  std::string name() const override { return "orca"; }
  BatchPlan schedule(const InstanceView& v, Time now) override;
};

class SarathiScheduler : public BatchScheduler {
 public:
  SarathiScheduler(FcfsParams p, bool by_priority) : p_(p), by_priority_(by_priority) {}
  std::string name() const override { return by_priority_ ? "sarathi_priority" : "sarathi_fcfs"; }
  ParamMap params() const override { return {{"token_budget", double(p_.token_budget)}}; }
  BatchPlan schedule(const InstanceView& v, Time now) override;

 private:
  FcfsParams p_;
  bool by_priority_;
};

class EdfScheduler : public BatchScheduler {
 public:
  explicit EdfScheduler(FcfsParams p) : p_(p) {}
  std::string name() const override { return "edf"; }
  ParamMap params() const override { return {{"token_budget", double(p_.token_budget)}}; }
  BatchPlan schedule(const InstanceView& v, Time now) override;
  static double next_deadline(const RequestState& s);

 private:
  BatchPlan schedule_sorted(const InstanceView& v);  // one full sort (NaN deadlines)
  FcfsParams p_;
};

}  // namespace slocore
