// Must NOT compile: a batch scheduler registered as a global policy. ctest runs the compiler
// on this file and passes only when registered<>'s static_assert names the mistake.
#include "slocore/baselines/schedulers.h"
#include "slocore/core/families.h"

namespace slocore {

std::vector<RegistryEntry<GlobalPolicy>> wrong_interface() {
  return {registered<GlobalPolicy, OrcaScheduler>("orca", "a batch scheduler in the global policy registry")};
}

}  // namespace slocore
