// The registry's families: each one's entries live in its own <family>/registry.cc, next to
// its code; policy/, batch/ and scale/registry.cc join them into one table per kind.
#pragma once
#include <vector>

#include "slocore/batch/batch_scheduler.h"
#include "slocore/core/registry_table.h"
#include "slocore/policy/global_policy.h"
#include "slocore/scale/scaler.h"

namespace slocore {

std::vector<RegistryEntry<GlobalPolicy>> baseline_global_policies();  // baselines/registry.cc
std::vector<RegistryEntry<GlobalPolicy>> hfx_global_policies();       // hfx/registry.cc
std::vector<RegistryEntry<GlobalPolicy>> proserve_global_policies();  // proserve/registry.cc
std::vector<RegistryEntry<GlobalPolicy>> sibyl_global_policies();     // sibyl/registry.cc
std::vector<RegistryEntry<GlobalPolicy>> stack_global_policies();     // stack/registry.cc

std::vector<RegistryEntry<BatchScheduler>> baseline_batch_schedulers();  // baselines/registry.cc
std::vector<RegistryEntry<BatchScheduler>> proserve_batch_schedulers();  // proserve/registry.cc
std::vector<RegistryEntry<BatchScheduler>> slice_batch_schedulers();     // slice/registry.cc
std::vector<RegistryEntry<BatchScheduler>> stack_batch_schedulers();     // stack/registry.cc

std::vector<RegistryEntry<Scaler>> hfx_scalers();  // hfx/registry.cc

}  // namespace slocore
