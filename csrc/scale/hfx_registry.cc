// HFX Scaler entries (none yet).
#include "families.h"

namespace slocore {

std::vector<RegistryEntry<Scaler>> hfx_scalers() { return {}; }

}  // namespace slocore
