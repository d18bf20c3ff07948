// SIBYL BatchScheduler entries (none yet).
#include "families.h"

namespace slocore {

std::vector<RegistryEntry<BatchScheduler>> sibyl_batch_schedulers() { return {}; }

}  // namespace slocore
