// Global policies by name, each with its parameter table (core/params.h).
// Unknown names and unknown parameters raise InvalidArgument listing what is valid.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "slocore/core/registry_table.h"
#include "slocore/policy/global_policy.h"

namespace slocore {

std::shared_ptr<GlobalPolicy> make_global_policy(const std::string& name, const ParamMap& params = {});
std::vector<std::string> global_policy_names();
RegistryInfo global_policy_info(const std::string& name);  // summary and parameter table

}  // namespace slocore
