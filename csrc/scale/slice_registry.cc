// SLICE Scaler entries (none yet).
#include "families.h"

namespace slocore {

std::vector<RegistryEntry<Scaler>> slice_scalers() { return {}; }

}  // namespace slocore
