// ProServe BatchScheduler entries (none yet).
#include "families.h"

namespace slocore {

std::vector<RegistryEntry<BatchScheduler>> proserve_batch_schedulers() { return {}; }

}  // namespace slocore
