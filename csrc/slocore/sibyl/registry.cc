// SIBYL GlobalPolicy entries: the decode policy with its ablations (SIBYL Sec. 5.3, Fig. 8)
// as typed parameters, and the paper's baselines deciding at prefill start (early_assign).
#include "slocore/core/families.h"
#include "slocore/policy/registry.h"
#include "slocore/sibyl/early_assign.h"
#include "slocore/sibyl/policy.h"

namespace slocore {

namespace {

std::shared_ptr<sibyl::EarlyAssign> make_early_assign(const sibyl::EarlyAssignParams& p) {
  require(p.policy != "early_assign" && p.policy != "sibyl", "early_assign.policy",
          "must name a push policy, got '" + p.policy + "'");
  try {
    return std::make_shared<sibyl::EarlyAssign>(make_global_policy(p.policy, p.inner));
  } catch (const InvalidArgument& e) {  // "<inner>.field: ..." -> "early_assign.inner.field: ..."
    const std::string what = e.what(), own = p.policy + ".";
    throw InvalidArgument(what.compare(0, own.size(), own) == 0 ? "early_assign.inner." + what.substr(own.size())
                                                                 : "early_assign.policy: " + what);
  }
}

}  // namespace

std::vector<RegistryEntry<GlobalPolicy>> sibyl_global_policies() {
  return {
      registered<GlobalPolicy, sibyl::SibylPolicy>(
          "sibyl", "SIBYL decode policy: least projected load at handoff (Alg. 1; Fig. 8 ablations as parameters)",
          sibyl::SibylParams{}),
      registered<GlobalPolicy, sibyl::EarlyAssign>(
          "early_assign",
          "any push policy deciding at prefill start (the paper's RR/ILS baselines, Alg. 2 lines 15-18)",
          sibyl::EarlyAssignParams{}, make_early_assign),
  };
}

}  // namespace slocore
