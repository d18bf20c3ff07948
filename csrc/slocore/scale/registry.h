// Scalers by name (see policy/registry.h).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "slocore/core/registry_table.h"
#include "slocore/scale/scaler.h"

namespace slocore {

std::shared_ptr<Scaler> make_scaler(const std::string& name, const ParamMap& params = {});
std::vector<std::string> scaler_names();
RegistryInfo scaler_info(const std::string& name);  // summary and parameter table

}  // namespace slocore
