// The scaler table. Add a scaler: one entry here, reading its typed params.
#include "slocore/scale/registry.h"

#include "slocore/core/registry_table.h"

namespace slocore {

namespace {

const std::vector<RegistryEntry<Scaler>>& table() {
  static const std::vector<RegistryEntry<Scaler>> t = {
  };
  return t;
}

}  // namespace

std::shared_ptr<Scaler> make_scaler(const std::string& name, const ParamMap& params) {
  return make_from(table(), "scaler", name, params);
}

std::vector<std::string> scaler_names() { return names_of(table()); }

}  // namespace slocore
