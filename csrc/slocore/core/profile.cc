#include "slocore/core/profile.h"

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
}

double HardwareProfile::kv_transfer_time(Tokens tokens) const {
  if (kv_bandwidth_bytes_per_s <= 0) return kv_fixed_s;
  return kv_fixed_s + double(tokens) * kv_bytes_per_token / kv_bandwidth_bytes_per_s;
}

}  // namespace slocore
