// What a router can know about one engine (DESIGN.md "Contracts"): role, running and
// waiting requests with their progress, KV blocks, limits, and the engine's latency model.
// The simulator keeps one view per instance as the engine's own state, so policies read
// it by const reference without copies; the live router fills it from engine metrics.
#pragma once
#include <cmath>
#include <vector>

#include "slocore/core/latency_model.h"
#include "slocore/core/request.h"

namespace slocore {

struct RequestState {
  Request request;
  Tokens prefilled = 0;  // prompt tokens whose KV is computed
  Tokens generated = 0;  // output tokens produced
  Time first_token = std::nan("");
  Time last_token = std::nan("");

  Tokens context_len() const { return prefilled + generated; }  // HFX l_cur
  bool in_prefill() const { return prefilled < request.prompt_len; }
  Tokens prefill_left() const { return request.prompt_len - prefilled; }
};

struct InstanceView {
  Id id = 0;
  Role role = Role::Colocated;
  bool accepting = true;  // false while draining or starting
  std::vector<RequestState> running;  // holds KV (prefilling in chunks or decoding)
  std::vector<RequestState> waiting;  // admitted to the engine, no KV yet
  int64_t kv_blocks_total = 0;
  int64_t kv_blocks_free = 0;
  int block_size = 16;
  Tokens max_batch_tokens = 8192;  // per-iteration token budget (chunked prefill)
  int max_num_seqs = 256;
  LatencyModel model;
  Time busy_until = 0.0;  // end of the iteration in flight (== now when idle)

  size_t num_requests() const { return running.size() + waiting.size(); }
  double kv_utilization() const {
    return kv_blocks_total > 0 ? 1.0 - double(kv_blocks_free) / double(kv_blocks_total) : 0.0;
  }
  int64_t blocks_for(Tokens tokens) const { return (tokens + block_size - 1) / block_size; }
  void validate() const;  // InvalidArgument naming the field
};

}  // namespace slocore
