// SLICE GlobalPolicy entries (none yet).
#include "families.h"

namespace slocore {

std::vector<RegistryEntry<GlobalPolicy>> slice_global_policies() { return {}; }

}  // namespace slocore
