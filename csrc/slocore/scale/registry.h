// Scalers by name (see policy/registry.h).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "slocore/scale/scaler.h"

namespace slocore {

std::shared_ptr<Scaler> make_scaler(const std::string& name, const ParamMap& params = {});
std::vector<std::string> scaler_names();

}  // namespace slocore
