// The slocore stack's GlobalPolicy entries: slo_predict (per-request TTFT/TPOT prediction).
#include "slocore/core/families.h"
#include "slocore/stack/slo_predict.h"

namespace slocore {

std::vector<RegistryEntry<GlobalPolicy>> stack_global_policies() {
  return {
      registered<GlobalPolicy, stack::SloPredictPolicy>(
          "slo_predict",
          "slocore: per-instance TTFT/TPOT prediction (queue, decodes, hardware, cached prefix); least predicted "
          "SLO loss, then most slack; predictions within the error margin tie, fewest outstanding wins",
          stack::SloPredictParams{}),
  };
}

}  // namespace slocore
