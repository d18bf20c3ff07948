#include "slocore/serve/token_prompt.h"

#include <algorithm>

#include "slocore/core/errors.h"
#include "slocore/core/prefix.h"

namespace slocore {

TokenPrompt token_prompt(const std::vector<int64_t>& ids, int block_size, int64_t max_blocks) {
  require(!ids.empty(), "ids", "must not be empty");
  require(max_blocks >= 0, "max_blocks", "must be >= 0");
  TokenPrompt out;
  const auto [lo, hi] = std::minmax_element(ids.begin(), ids.end());
  out.lo = *lo;
  out.hi = *hi;
  out.segments = id_block_segments(ids, block_size, block_size, max_blocks);
  return out;
}

}  // namespace slocore
