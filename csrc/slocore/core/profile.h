// A named hardware profile: the simulator's truth for one (accelerator, model) pair
// (docs/design.md "Truth and belief in the simulator"). The data lives in the Python package
// (python/slocore/profiles/data/*.json, derived by roofline with sources); C++ callers fill
// this struct directly.
#pragma once
#include <optional>
#include <string>

#include "slocore/core/latency_model.h"

namespace slocore {

struct TpsQuadratic {
  double a = 0.0, b = 0.0, c = 0.0;  // TPS(N) = a*N^2 + b*N + c tokens/s (SIBYL)
};

struct HardwareProfile {
  std::string name;
  LatencyCoeffs coeffs;   // per-request model (ProServe Eq. 4-7)
  int64_t kv_blocks = 0;  // KV-cache capacity in blocks
  int block_size = 16;    // tokens per block
  double kv_bytes_per_token = 0.0;
  double kv_bandwidth_bytes_per_s = 0.0;  // prefill -> decode KV transfer
  double kv_fixed_s = 0.0;                // fixed cost per transfer
  std::optional<TpsQuadratic> tps;
  double cold_start_s = -1.0;  // seconds to bring one up (< 0: the simulator's default)
  void validate() const;
  // Seconds to move the KV cache of `tokens` tokens between instances.
  double kv_transfer_time(Tokens tokens) const;
};

// KV transfer between two instances of possibly different profiles: the slower link and the
// larger fixed cost bound it (bytes per token from the sender's model). Equal profiles give
// HardwareProfile::kv_transfer_time.
double kv_transfer_time(const HardwareProfile& from, const HardwareProfile& to, Tokens tokens);

}  // namespace slocore
