#include "slocore/core/instance_view.h"

#include <algorithm>
#include <atomic>

#include "slocore/core/errors.h"

namespace slocore {

void InstanceView::validate() const {
  require(id >= 0, "id", "must be >= 0");
  require(kv_blocks_total >= 0, "kv_blocks_total", "must be >= 0");
  require(kv_blocks_free >= 0 && kv_blocks_free <= kv_blocks_total, "kv_blocks_free",
          "must be in [0, kv_blocks_total]");
  require(block_size >= 1, "block_size", "must be >= 1");
  require(max_batch_tokens >= 1, "max_batch_tokens", "must be >= 1");
  require(max_num_seqs >= 1, "max_num_seqs", "must be >= 1");
  require_nonneg(busy_until, "busy_until");
  for_each_request([this](const RequestState& s, bool is_running) {
    slocore::validate(s.request);
    if (!(s.generated >= 0 && s.generated <= kMaxTokens))  // before num_tokens() adds it
      fail("generated", "must be in [0, 2^40], got " + std::to_string(s.generated));
    if (!(s.computed >= 0 && s.computed <= s.num_tokens()))
      fail("computed", "must be in [0, prompt_len + generated] (request " + std::to_string(s.request.id) + ")");
    if (!(s.shared >= 0 && s.shared <= s.computed && s.shared % block_size == 0 &&
          (is_running || s.shared <= s.cached)))
      fail("shared", "must be whole blocks in [0, computed], and within cached when waiting (request " +
                         std::to_string(s.request.id) + ")");
  });
}

uint64_t next_view_epoch() {
  static std::atomic<uint64_t> last{0};
  return last.fetch_add(1, std::memory_order_relaxed) + 1;
}

}  // namespace slocore
