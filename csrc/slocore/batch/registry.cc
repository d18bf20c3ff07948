// The batch scheduler registry: every family's entries (baselines/registry.cc, <paper>/registry.cc)
// joined into one table. A new family adds one name here and one declaration in core/families.h.
#include "slocore/batch/registry.h"

#include "slocore/core/families.h"

namespace slocore {

namespace {

const std::vector<RegistryEntry<BatchScheduler>>& table() {
  static const auto t = joined<BatchScheduler>(
      {baseline_batch_schedulers(), proserve_batch_schedulers(), slice_batch_schedulers(), stack_batch_schedulers()});
  return t;
}

}  // namespace

std::shared_ptr<BatchScheduler> make_batch_scheduler(const std::string& name, const ParamMap& params) {
  std::shared_ptr<BatchScheduler> s = make_from(table(), "batch scheduler", name, params);
  s->engine_local_ = true;
  return s;
}

std::vector<std::string> batch_scheduler_names() { return names_of(table()); }

RegistryInfo batch_scheduler_info(const std::string& name) { return info_from(table(), "batch scheduler", name); }

}  // namespace slocore
