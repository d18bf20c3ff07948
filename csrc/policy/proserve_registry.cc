// ProServe GlobalPolicy entries (none yet).
#include "families.h"

namespace slocore {

std::vector<RegistryEntry<GlobalPolicy>> proserve_global_policies() { return {}; }

}  // namespace slocore
