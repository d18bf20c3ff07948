// The registry table: baselines here, each paper's entries in its own *_registry.cc (families.h).
#include "slocore/policy/registry.h"

#include "slocore/core/registry_table.h"
#include "families.h"
#include "slocore/policy/baselines.h"

namespace slocore {

namespace {

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
  };
}

// Baselines first, then each paper's family (registered in its own file, see families.h).
const std::vector<RegistryEntry<GlobalPolicy>>& table() {
  static const auto t = joined<GlobalPolicy>({baseline_global_policies(), hfx_global_policies(), proserve_global_policies(), slice_global_policies(), sibyl_global_policies()});
  return t;
}

}  // namespace

std::shared_ptr<GlobalPolicy> make_global_policy(const std::string& name, const ParamMap& params) {
  return make_from(table(), "global policy", name, params);
}

std::vector<std::string> global_policy_names() { return names_of(table()); }

}  // namespace slocore
