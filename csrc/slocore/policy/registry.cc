// The global policy registry: every family's entries (baselines/registry.cc, <paper>/registry.cc)
// joined into one table. A new family adds one name here and one declaration in core/families.h.
#include "slocore/policy/registry.h"

#include "slocore/core/families.h"
#include "slocore/policy/recording.h"

namespace slocore {

namespace {

// Tools over any policy: the event recorder of the conformance test.
std::vector<RegistryEntry<GlobalPolicy>> tool_global_policies() {
  return {
      {"recording",
       "records every call (the event contract) and forwards it to an inner policy; param policy=<name>, "
       "the others go to the inner policy",
       [](const ParamMap& p) -> std::shared_ptr<GlobalPolicy> {
         ParamMap rest = p;
         std::string inner = "least_outstanding";
         if (auto it = rest.find("policy"); it != rest.end()) {
           require(std::holds_alternative<std::string>(it->second), "recording.policy", "must be a policy name");
           inner = std::get<std::string>(it->second);
           rest.erase(it);
         }
         require(inner != "recording", "recording.policy", "must name another policy");
         return std::make_shared<RecordingPolicy>(make_global_policy(inner, rest));
       }},
  };
}

const std::vector<RegistryEntry<GlobalPolicy>>& table() {
  static const auto t = joined<GlobalPolicy>({baseline_global_policies(), hfx_global_policies(), proserve_global_policies(), sibyl_global_policies(), tool_global_policies()});
  return t;
}

}  // namespace

std::shared_ptr<GlobalPolicy> make_global_policy(const std::string& name, const ParamMap& params) {
  return make_from(table(), "global policy", name, params);
}

std::vector<std::string> global_policy_names() { return names_of(table()); }

}  // namespace slocore
