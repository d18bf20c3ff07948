// Baseline entries of the three registries: simple routers, engine schedulers (docs/baselines.md).
#include "slocore/core/families.h"
#include "slocore/baselines/schedulers.h"
#include "slocore/baselines/fair_schedulers.h"
#include "slocore/baselines/routers.h"
#include "slocore/baselines/cache_routers.h"

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
      {"llmd_scorer", "llm-d weighted scorer: prefix cache 3 + queue 2 + KV utilisation 2 (docs/baselines.md)",
       [](const ParamMap& p) {
         ParamReader rd("llmd_scorer", p);
         WeightedScorerParams wp;
         rd.get("w_prefix", wp.w_prefix);
         rd.get("w_queue", wp.w_queue);
         rd.get("w_kv", wp.w_kv);
         rd.get("prefix_source", wp.prefix_source);
         rd.finish();
         return std::make_shared<WeightedScorerPolicy>(wp);
       }},
      {"kv_router", "Dynamo KvRouter: min overlap_weight*prefill blocks + active blocks (docs/baselines.md)",
       [](const ParamMap& p) {
         ParamReader rd("kv_router", p);
         KvRouterParams kp;
         rd.get("overlap_weight", kp.overlap_weight);
         rd.get("prefix_source", kp.prefix_source);
         rd.finish();
         return std::make_shared<KvRouterPolicy>(kp);
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
  };
}

std::vector<RegistryEntry<Scaler>> baseline_scalers() {
  return {
  };
}

}  // namespace slocore
