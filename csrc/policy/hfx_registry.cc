// HFX GlobalPolicy entries (none yet).
#include "families.h"

namespace slocore {

std::vector<RegistryEntry<GlobalPolicy>> hfx_global_policies() { return {}; }

}  // namespace slocore
