// SIBYL GlobalPolicy entries (none yet).
#include "families.h"

namespace slocore {

std::vector<RegistryEntry<GlobalPolicy>> sibyl_global_policies() { return {}; }

}  // namespace slocore
