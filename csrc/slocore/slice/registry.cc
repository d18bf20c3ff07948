// SLICE BatchScheduler entries: slice (SLICE Alg. 2-4).
#include "slocore/core/families.h"
#include "slocore/slice/slice_scheduler.h"

namespace slocore {

std::vector<RegistryEntry<BatchScheduler>> slice_batch_schedulers() {
  return {
      registered<BatchScheduler, slice::SliceScheduler>(
          "slice", "SLICE: utility-rate task selection + decode-mask rate allocation, online (Alg. 2-4)",
          slice::SliceParams{}),
  };
}

}  // namespace slocore
