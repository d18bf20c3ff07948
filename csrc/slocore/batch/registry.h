// Local batch schedulers by name (see policy/registry.h).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "slocore/batch/batch_scheduler.h"
#include "slocore/core/registry_table.h"

namespace slocore {

std::shared_ptr<BatchScheduler> make_batch_scheduler(const std::string& name, const ParamMap& params = {});
std::vector<std::string> batch_scheduler_names();
RegistryInfo batch_scheduler_info(const std::string& name);  // summary and parameter table

}  // namespace slocore
