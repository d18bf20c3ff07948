// The registry table: baselines here, each paper's entries in its own *_registry.cc (families.h).
#include "slocore/scale/registry.h"

#include "slocore/core/registry_table.h"
#include "families.h"

namespace slocore {

namespace {

std::vector<RegistryEntry<Scaler>> baseline_scalers() {
  return {
  };
}

// Baselines first, then each paper's family (registered in its own file, see families.h).
const std::vector<RegistryEntry<Scaler>>& table() {
  static const auto t = joined<Scaler>({baseline_scalers(), hfx_scalers(), proserve_scalers(), slice_scalers(), sibyl_scalers()});
  return t;
}

}  // namespace

std::shared_ptr<Scaler> make_scaler(const std::string& name, const ParamMap& params) {
  return make_from(table(), "scaler", name, params);
}

std::vector<std::string> scaler_names() { return names_of(table()); }

}  // namespace slocore
