// SLICE BatchScheduler entries (none yet).
#include "families.h"

namespace slocore {

std::vector<RegistryEntry<BatchScheduler>> slice_batch_schedulers() { return {}; }

}  // namespace slocore
