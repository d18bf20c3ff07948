// The global policy registry: every family's entries (baselines/registry.cc, <paper>/registry.cc)
// joined into one table. A new family adds one name here and one declaration in core/families.h.
#include "slocore/policy/registry.h"

#include "slocore/core/families.h"
#include "slocore/policy/recording.h"

namespace slocore {

namespace {

std::shared_ptr<RecordingPolicy> make_recording(const RecordingParams& p) {
  require(p.policy != "recording", "recording.policy", "must name another policy");
  return std::make_shared<RecordingPolicy>(make_global_policy(p.policy, p.inner));
}

// Tools over any policy: the event recorder of the conformance test.
std::vector<RegistryEntry<GlobalPolicy>> tool_global_policies() {
  return {
      registered<GlobalPolicy, RecordingPolicy>(
          "recording", "records every call (the event contract) and forwards it to an inner policy", RecordingParams{},
          make_recording),
  };
}

const std::vector<RegistryEntry<GlobalPolicy>>& table() {
  static const auto t =
      joined<GlobalPolicy>({baseline_global_policies(), hfx_global_policies(), proserve_global_policies(),
                            sibyl_global_policies(), stack_global_policies(), tool_global_policies()});
  return t;
}

}  // namespace

std::shared_ptr<GlobalPolicy> make_global_policy(const std::string& name, const ParamMap& params) {
  return make_from(table(), "global policy", name, params);
}

std::vector<std::string> global_policy_names() { return names_of(table()); }

RegistryInfo global_policy_info(const std::string& name) { return info_from(table(), "global policy", name); }

}  // namespace slocore
