// ProServe Scaler entries (none yet).
#include "families.h"

namespace slocore {

std::vector<RegistryEntry<Scaler>> proserve_scalers() { return {}; }

}  // namespace slocore
