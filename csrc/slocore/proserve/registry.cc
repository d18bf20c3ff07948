// ProServe GlobalPolicy entries: goroute (Alg. 2 of 003_2674c12c132a39ef.txt).
// ProServe BatchScheduler entries: slide_batching (Alg. 1 of 003_2674c12c132a39ef.txt).
#include "slocore/core/families.h"
#include "slocore/proserve/goroute.h"
#include "slocore/proserve/slide_batching.h"

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

namespace slocore {

namespace {

proserve::SlideParams slide_params(const ParamMap& p) {
  ParamReader rd("slide_batching", p);
  proserve::SlideParams sp;
  std::string phi = "a";
  double budget = double(sp.token_budget);
  rd.get("phi", phi);
  rd.get("gamma", sp.gamma);
  rd.get("eta", sp.eta);
  rd.get("w_prefill", sp.weights.w_prefill);
  rd.get("w_decode", sp.weights.w_decode);
  rd.get("order", sp.order);
  rd.get("latency_aware", sp.latency_aware);
  rd.get("token_budget", budget);
  rd.finish();
  require(phi == "a" || phi == "c" || phi == "p", "slide_batching.phi", "must be 'a', 'c' or 'p', got '" + phi + "'");
  sp.phi = phi == "a" ? proserve::Phi::Aggressive : phi == "c" ? proserve::Phi::Conservative : proserve::Phi::Prefill;
  require(budget >= 1, "slide_batching.token_budget", "must be >= 1");
  sp.token_budget = Tokens(budget);
  sp.validate();
  return sp;
}

}  // namespace

std::vector<RegistryEntry<BatchScheduler>> proserve_batch_schedulers() {
  return {
      {"slide_batching", "ProServe SlideBatching: latency budget, urgent by TDG density, normal by deadline (Alg. 1)",
       [](const ParamMap& p) { return std::make_shared<proserve::SlideBatchingScheduler>(slide_params(p)); }},
  };
}

}  // namespace slocore
