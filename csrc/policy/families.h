// Each paper's GlobalPolicy entries live next to its code; registry.cc concatenates them.
#pragma once
#include <vector>

#include "slocore/core/registry_table.h"
#include "slocore/policy/global_policy.h"

namespace slocore {

std::vector<RegistryEntry<GlobalPolicy>> hfx_global_policies();       // policy/hfx_registry.cc
std::vector<RegistryEntry<GlobalPolicy>> proserve_global_policies();  // policy/proserve_registry.cc
std::vector<RegistryEntry<GlobalPolicy>> slice_global_policies();     // policy/slice_registry.cc
std::vector<RegistryEntry<GlobalPolicy>> sibyl_global_policies();     // policy/sibyl_registry.cc

}  // namespace slocore
