// HFX BatchScheduler entries (none yet).
#include "families.h"

namespace slocore {

std::vector<RegistryEntry<BatchScheduler>> hfx_batch_schedulers() { return {}; }

}  // namespace slocore
