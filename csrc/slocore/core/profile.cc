#include "slocore/core/profile.h"

#include <algorithm>
#include <cmath>

#include "slocore/core/errors.h"

namespace slocore {

void HardwareProfile::validate() const {
  require(!name.empty(), "name", "must not be empty");
  coeffs.validate();
  require(kv_blocks >= 1, "kv_blocks", "must be >= 1");
  require(block_size >= 1, "block_size", "must be >= 1");
  require_nonneg(kv_bytes_per_token, "kv_bytes_per_token");
  require_nonneg(kv_bandwidth_bytes_per_s, "kv_bandwidth_bytes_per_s");
  require_nonneg(kv_fixed_s, "kv_fixed_s");
  require(std::isfinite(cold_start_s), "cold_start_s", "must be finite (< 0: the simulator's default)");
}

double HardwareProfile::kv_transfer_time(Tokens tokens) const {
  if (kv_bandwidth_bytes_per_s <= 0) return kv_fixed_s;
  return kv_fixed_s + double(tokens) * kv_bytes_per_token / kv_bandwidth_bytes_per_s;
}

double kv_transfer_time(const HardwareProfile& from, const HardwareProfile& to, Tokens tokens) {
  const double fixed = std::max(from.kv_fixed_s, to.kv_fixed_s);
  double bw = from.kv_bandwidth_bytes_per_s;  // <= 0: no bandwidth limit on that side
  if (to.kv_bandwidth_bytes_per_s > 0 && (bw <= 0 || to.kv_bandwidth_bytes_per_s < bw))
    bw = to.kv_bandwidth_bytes_per_s;
  if (bw <= 0) return fixed;
  return fixed + double(tokens) * from.kv_bytes_per_token / bw;
}

}  // namespace slocore
