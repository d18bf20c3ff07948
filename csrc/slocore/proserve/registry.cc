// ProServe GlobalPolicy entries: goroute (GoRouting, ProServe Alg. 2).
// ProServe BatchScheduler entries: slide_batching (SlideBatching, ProServe Alg. 1).
#include "slocore/core/families.h"
#include "slocore/proserve/goroute.h"
#include "slocore/proserve/slide_batching.h"

namespace slocore {

std::vector<RegistryEntry<GlobalPolicy>> proserve_global_policies() {
  return {
      registered<GlobalPolicy, proserve::GoRoutePolicy>(
          "goroute",
          "ProServe GoRouting: gain-aware dispatch with dual load thresholds (Alg. 2; pd | colocated | decode)",
          proserve::GoRouteParams{}),
  };
}

std::vector<RegistryEntry<BatchScheduler>> proserve_batch_schedulers() {
  return {
      registered<BatchScheduler, proserve::SlideBatchingScheduler>(
          "slide_batching",
          "ProServe SlideBatching: latency budget, urgent by TDG density, normal by deadline (Alg. 1)",
          proserve::SlideParams{}),
  };
}

}  // namespace slocore
