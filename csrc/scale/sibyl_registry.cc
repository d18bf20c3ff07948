// SIBYL Scaler entries (none yet).
#include "families.h"

namespace slocore {

std::vector<RegistryEntry<Scaler>> sibyl_scalers() { return {}; }

}  // namespace slocore
