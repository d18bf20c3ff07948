// Baseline entries of the three registries: simple routers, engine schedulers (docs/baselines.md).
#include "slocore/core/families.h"
#include "slocore/baselines/schedulers.h"
#include "slocore/baselines/fair_schedulers.h"
#include "slocore/baselines/routers.h"
#include "slocore/baselines/power_of_two.h"
#include "slocore/baselines/vllm_priority.h"

namespace slocore {

std::vector<RegistryEntry<GlobalPolicy>> baseline_global_policies() {
  return {
      {"round_robin", "next instance in id order (RR baseline of HFX, SIBYL)",
       [](const ParamMap& p) {
         ParamReader("round_robin", p).finish();
         return std::make_shared<RoundRobinPolicy>();
       }},
      {"random", "uniform random instance, seeded",
       [](const ParamMap& p) {
         ParamReader rd("random", p);
         double seed = 0;
         rd.get("seed", seed);
         rd.finish();
         return std::make_shared<RandomPolicy>(uint64_t(seed));
       }},
      {"least_outstanding", "fewest running+waiting requests (SIBYL ILS, ProServe Min-Load)",
       [](const ParamMap& p) {
         ParamReader("least_outstanding", p).finish();
         return std::make_shared<LeastOutstandingPolicy>();
       }},
      {"least_tokens", "least outstanding prefill+decode tokens",
       [](const ParamMap& p) {
         ParamReader rd("least_tokens", p);
         double d = 128;
         rd.get("default_output", d);
         rd.finish();
         return std::make_shared<LeastTokensPolicy>(d);
       }},
      {"power_of_two", "power of two choices: fewer outstanding of two random instances (Mitzenmacher TPDS'01)",
       [](const ParamMap& p) {
         ParamReader rd("power_of_two", p);
         double seed = 0;
         rd.get("seed", seed);
         rd.finish();
         require(seed >= 0, "power_of_two.seed", "must be >= 0");
         return std::make_shared<PowerOfTwoPolicy>(uint64_t(seed));
       }},
  };
}

namespace {

// Params of the token-budget schedulers (Sarathi, EDF): `token_budget` >= 1.
FcfsParams budget_params(const char* name, const ParamMap& p) {
  ParamReader rd(name, p);
  FcfsParams fp;
  double budget = double(fp.token_budget);
  rd.get("token_budget", budget);
  rd.finish();
  require(budget >= 1, std::string(name) + ".token_budget", "must be >= 1");
  fp.token_budget = Tokens(budget);
  return fp;
}

}  // namespace

std::vector<RegistryEntry<BatchScheduler>> baseline_batch_schedulers() {
  return {
      {"vllm_fcfs", "vLLM prefill-first FCFS, newest preempted (SOSP'23)",
       [](const ParamMap& p) {
         ParamReader rd("vllm_fcfs", p);
         FcfsParams fp;
         rd.get("chunked", fp.chunked);
         rd.finish();
         return std::make_shared<VllmFcfsScheduler>(fp);
       }},
      {"orca", "Orca iteration-level FCFS, whole prompts join running decodes (OSDI'22)",
       [](const ParamMap& p) {
         ParamReader("orca", p).finish();
         return std::make_shared<OrcaScheduler>();
       }},
      {"sarathi_fcfs", "Sarathi-Serve decode-first + chunked prefill FCFS (OSDI'24)",
       [](const ParamMap& p) { return std::make_shared<SarathiScheduler>(budget_params("sarathi_fcfs", p), false); }},
      {"sarathi_priority", "Sarathi-Serve with (priority, arrival) prefill order",
       [](const ParamMap& p) { return std::make_shared<SarathiScheduler>(budget_params("sarathi_priority", p), true); }},
      {"edf", "FairBatching-style earliest token deadline first (ProServe Eq. 3 deadlines)",
       [](const ParamMap& p) {
         const FcfsParams fp = budget_params("edf", p);
         return std::make_shared<EdfScheduler>(fp);
       }},
      {"weighted_vtc", "Virtual Token Counter fair queuing over priority classes, weighted (OSDI'24; ProServe baseline)",
       [](const ParamMap& p) {
         ParamReader rd("weighted_vtc", p);
         VtcParams vp;
         double budget = double(vp.token_budget);
         rd.get("token_budget", budget);
         rd.get("w_in", vp.w_in);
         rd.get("w_out", vp.w_out);
         rd.finish();
         require(budget >= 1, "weighted_vtc.token_budget", "must be >= 1");
         require(vp.w_in > 0 && vp.w_out > 0, "weighted_vtc.w_in/w_out", "must be > 0");
         vp.token_budget = Tokens(budget);
         return std::make_shared<WeightedVtcScheduler>(vp);
       }},
      {"mlfq", "FastServe skip-join multi-level feedback queue, preemptive per iteration (arXiv'23)",
       [](const ParamMap& p) {
         ParamReader rd("mlfq", p);
         MlfqParams mp;
         double levels = mp.levels;
         rd.get("levels", levels);
         rd.get("base_quantum_s", mp.base_quantum_s);
         rd.get("promote_after_s", mp.promote_after_s);
         rd.finish();
         require(levels >= 1 && levels <= 32, "mlfq.levels", "must be in [1, 32]");
         require(mp.base_quantum_s > 0, "mlfq.base_quantum_s", "must be > 0");
         require(mp.promote_after_s > 0, "mlfq.promote_after_s", "must be > 0");
         mp.levels = int(levels);
         return std::make_shared<MlfqScheduler>(mp);
       }},
      {"vllm_priority", "vLLM V1 --scheduling-policy priority: running first, waiting by (priority, arrival)",
       [](const ParamMap& p) {
         ParamReader rd("vllm_priority", p);
         double budget = 0;  // 0: the engine's max_batch_tokens (vLLM's max_num_batched_tokens)
         rd.get("token_budget", budget);
         rd.finish();
         require(budget >= 0, "vllm_priority.token_budget", "must be >= 0");
         return std::make_shared<VllmPriorityScheduler>(Tokens(budget));
       }},
  };
}

std::vector<RegistryEntry<Scaler>> baseline_scalers() {
  return {
  };
}

}  // namespace slocore
