// Local batch schedulers by name (see policy/registry.h).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "slocore/batch/batch_scheduler.h"

namespace slocore {

std::shared_ptr<BatchScheduler> make_batch_scheduler(const std::string& name, const ParamMap& params = {});
std::vector<std::string> batch_scheduler_names();

}  // namespace slocore
