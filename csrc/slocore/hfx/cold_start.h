// HFX Table 2 (HFX Sec. 8.3): seconds to bring up one instance by where
// its weights come from. "d2d" = Fast Scaling (device-to-device from a running instance),
// "host" = CPU offloading, "disk" = loading from disk. The one definition of these numbers:
// python/slocore/sim/runner.py reads them through the binding.
#pragma once
#include <map>
#include <string>

#include "slocore/core/errors.h"

namespace slocore::hfx {

// model class -> source -> seconds (mean of Table 2).
inline const std::map<std::string, std::map<std::string, double>>& cold_start_table() {
  static const std::map<std::string, std::map<std::string, double>> t = {
      {"qwen7b", {{"d2d", 0.89}, {"host", 2.73}, {"disk", 4.14}}},
      {"qwen32b", {{"d2d", 2.05}, {"host", 19.41}, {"disk", 28.84}}},
      {"llama70b", {{"d2d", 1.16}, {"host", 11.50}, {"disk", 22.58}}},
  };
  return t;
}

inline double cold_start_seconds(const std::string& model, const std::string& source) {
  const auto& t = cold_start_table();
  auto m = t.find(model);
  require(m != t.end(), "cold_start.model", "unknown model class '" + model + "' (known: qwen7b, qwen32b, llama70b)");
  auto s = m->second.find(source);
  require(s != m->second.end(), "cold_start.source", "unknown source '" + source + "' (known: d2d, host, disk)");
  return s->second;
}

}  // namespace slocore::hfx
