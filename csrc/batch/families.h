// Each paper's BatchScheduler entries live next to its code; registry.cc concatenates them.
#pragma once
#include <vector>

#include "slocore/core/registry_table.h"
#include "slocore/batch/batch_scheduler.h"

namespace slocore {

std::vector<RegistryEntry<BatchScheduler>> hfx_batch_schedulers();       // batch/hfx_registry.cc
std::vector<RegistryEntry<BatchScheduler>> proserve_batch_schedulers();  // batch/proserve_registry.cc
std::vector<RegistryEntry<BatchScheduler>> slice_batch_schedulers();     // batch/slice_registry.cc
std::vector<RegistryEntry<BatchScheduler>> sibyl_batch_schedulers();     // batch/sibyl_registry.cc

}  // namespace slocore
