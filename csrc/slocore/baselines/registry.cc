// Baseline entries of the three registries: simple routers, engine schedulers (docs/baselines.md).
#include "slocore/core/families.h"
#include "slocore/baselines/cache_routers.h"
#include "slocore/baselines/schedulers.h"
#include "slocore/baselines/fair_schedulers.h"
#include "slocore/baselines/power_of_two.h"
#include "slocore/baselines/routers.h"
#include "slocore/baselines/vllm_priority.h"

namespace slocore {

std::vector<RegistryEntry<GlobalPolicy>> baseline_global_policies() {
  return {
      registered<GlobalPolicy, RoundRobinPolicy>("round_robin", "next instance in id order (RR baseline of HFX, SIBYL)"),
      registered<GlobalPolicy, RandomPolicy>("random", "uniform random instance, seeded", RandomParams{}),
      registered<GlobalPolicy, LeastOutstandingPolicy>(
          "least_outstanding", "fewest running+waiting requests (SIBYL ILS, ProServe Min-Load)"),
      registered<GlobalPolicy, LeastTokensPolicy>("least_tokens", "least outstanding prefill+decode tokens",
                                                  LeastTokensParams{}),
      registered<GlobalPolicy, PowerOfTwoPolicy>(
          "power_of_two", "power of two choices: fewer outstanding of two random instances (Mitzenmacher TPDS'01)",
          RandomParams{}),
      registered<GlobalPolicy, WeightedScorerPolicy>(
          "llmd_scorer", "llm-d weighted scorer: prefix cache 3 + queue 2 + KV utilisation 2 (docs/baselines.md)",
          WeightedScorerParams{}),
      registered<GlobalPolicy, KvRouterPolicy>(
          "kv_router", "Dynamo KvRouter: min overlap_weight*prefill blocks + active blocks (docs/baselines.md)",
          KvRouterParams{}),
  };
}

std::vector<RegistryEntry<BatchScheduler>> baseline_batch_schedulers() {
  auto sarathi = [](bool by_priority) {
    return [by_priority](const TokenBudgetParams& p) { return std::make_shared<SarathiScheduler>(p, by_priority); };
  };
  return {
      registered<BatchScheduler, VllmFcfsScheduler>(
          "vllm_fcfs", "vLLM prefill-first FCFS, newest preempted (SOSP'23)", VllmFcfsParams{}),
      registered<BatchScheduler, OrcaScheduler>(
          "orca", "Orca iteration-level FCFS, whole prompts join running decodes (OSDI'22)"),
      registered<BatchScheduler, SarathiScheduler>(
          "sarathi_fcfs", "Sarathi-Serve decode-first + chunked prefill FCFS (OSDI'24)", TokenBudgetParams{},
          sarathi(false)),
      registered<BatchScheduler, SarathiScheduler>(
          "sarathi_priority", "Sarathi-Serve with (priority, arrival) prefill order", TokenBudgetParams{}, sarathi(true)),
      registered<BatchScheduler, EdfScheduler>(
          "edf", "FairBatching-style earliest token deadline first (ProServe Eq. 3 deadlines)", TokenBudgetParams{}),
      registered<BatchScheduler, WeightedVtcScheduler>(
          "weighted_vtc",
          "Virtual Token Counter fair queuing over priority classes, weighted (OSDI'24; ProServe baseline)",
          VtcParams{}),
      registered<BatchScheduler, MlfqScheduler>(
          "mlfq", "FastServe skip-join multi-level feedback queue, preemptive per iteration (arXiv'23)", MlfqParams{}),
      registered<BatchScheduler, VllmPriorityScheduler>(
          "vllm_priority", "vLLM V1 --scheduling-policy priority: running first, waiting by (priority, arrival)",
          VllmPriorityParams{}),
  };
}

}  // namespace slocore
