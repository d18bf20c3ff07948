// Global policies by name (CONVENTIONS.md: "Policies are chosen by name from a registry").
// Unknown names and unknown parameters raise InvalidArgument listing what is valid.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "slocore/policy/global_policy.h"

namespace slocore {

std::shared_ptr<GlobalPolicy> make_global_policy(const std::string& name, const ParamMap& params = {});
std::vector<std::string> global_policy_names();

}  // namespace slocore
