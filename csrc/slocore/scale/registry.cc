// The scaler registry: every family's entries (baselines/registry.cc, <paper>/registry.cc)
// joined into one table. A new family adds one name here and one declaration in core/families.h.
#include "slocore/scale/registry.h"

#include "slocore/core/families.h"

namespace slocore {

namespace {

const std::vector<RegistryEntry<Scaler>>& table() {
  static const auto t = joined<Scaler>({hfx_scalers()});
  return t;
}

}  // namespace

std::shared_ptr<Scaler> make_scaler(const std::string& name, const ParamMap& params) {
  return make_from(table(), "scaler", name, params);
}

std::vector<std::string> scaler_names() { return names_of(table()); }

RegistryInfo scaler_info(const std::string& name) { return info_from(table(), "scaler", name); }

}  // namespace slocore
