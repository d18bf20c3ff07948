// The batch-scheduler table. Add a scheduler: one entry here, reading its typed params.
#include "slocore/batch/registry.h"

#include "slocore/core/registry_table.h"

namespace slocore {

namespace {

const std::vector<RegistryEntry<BatchScheduler>>& table() {
  static const std::vector<RegistryEntry<BatchScheduler>> t = {
  };
  return t;
}

}  // namespace

std::shared_ptr<BatchScheduler> make_batch_scheduler(const std::string& name, const ParamMap& params) {
  return make_from(table(), "batch scheduler", name, params);
}

std::vector<std::string> batch_scheduler_names() { return names_of(table()); }

}  // namespace slocore
