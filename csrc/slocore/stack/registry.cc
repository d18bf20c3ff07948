// The slocore stack's entries: slo_predict (GlobalPolicy, per-request TTFT/TPOT prediction) and
// slo_triage (BatchScheduler, vLLM priority order with late requests served last).
#include "slocore/core/families.h"
#include "slocore/stack/slo_predict.h"
#include "slocore/stack/slo_triage.h"

namespace slocore {

std::vector<RegistryEntry<GlobalPolicy>> stack_global_policies() {
  return {
      registered<GlobalPolicy, stack::SloPredictPolicy>(
          "slo_predict",
          "slocore: per-instance TTFT/TPOT prediction (queue, decodes, hardware, cached prefix); least predicted "
          "SLO loss, then most slack; predictions within the error margin tie: most prefill time saved by the cached "
          "prefix, then fewest outstanding",
          stack::SloPredictParams{}),
  };
}

std::vector<RegistryEntry<BatchScheduler>> stack_batch_schedulers() {
  return {
      registered<BatchScheduler, stack::SloTriageScheduler>(
          "slo_triage",
          "slocore: vLLM priority order for requests that can still meet their first-token deadline, late ones "
          "(past it, or predicted past it) after them from the budget left",
          stack::SloTriageParams{}),
  };
}

}  // namespace slocore
