// ProServe GlobalPolicy entries: goroute (Alg. 2 of 003_2674c12c132a39ef.txt).
#include "families.h"
#include "slocore/proserve/goroute.h"

namespace slocore {

std::vector<RegistryEntry<GlobalPolicy>> proserve_global_policies() {
  return {
      {"goroute", "ProServe GoRouting: gain-aware dispatch with dual load thresholds (Alg. 2; pd | colocated | decode)",
       [](const ParamMap& p) {
         ParamReader rd("goroute", p);
         proserve::GoRouteParams gp;
         double seed = 0;
         rd.get("mode", gp.mode);
         rd.get("alpha", gp.alpha);
         rd.get("mu", gp.mu);
         rd.get("lambda", gp.lambda);
         rd.get("w_prefill", gp.weights.w_prefill);
         rd.get("fallback", gp.fallback);
         rd.get("compensate", gp.compensate);
         rd.get("gain_phi", gp.gain_phi);
         rd.get("seed", seed);
         rd.finish();
         require(seed >= 0, "goroute.seed", "must be >= 0");
         gp.seed = uint64_t(seed);
         return std::make_shared<proserve::GoRoutePolicy>(gp);
       }},
  };
}

}  // namespace slocore
