// Each paper's Scaler entries live next to its code; registry.cc concatenates them.
#pragma once
#include <vector>

#include "slocore/core/registry_table.h"
#include "slocore/scale/scaler.h"

namespace slocore {

std::vector<RegistryEntry<Scaler>> hfx_scalers();       // scale/hfx_registry.cc
std::vector<RegistryEntry<Scaler>> proserve_scalers();  // scale/proserve_registry.cc
std::vector<RegistryEntry<Scaler>> slice_scalers();     // scale/slice_registry.cc
std::vector<RegistryEntry<Scaler>> sibyl_scalers();     // scale/sibyl_registry.cc

}  // namespace slocore
