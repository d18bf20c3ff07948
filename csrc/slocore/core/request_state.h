// One request's progress on an engine, as every policy reads it (InstanceView's running
// and waiting requests).
#pragma once
#include <cmath>

#include "slocore/core/request.h"

namespace slocore {

// Token accounting as in vLLM: a request has num_tokens() = prompt + generated known tokens,
// of which `computed` have KV on this instance. An iteration computes k more; when all known
// tokens are computed a new token is sampled (generated += 1). So a prefill (or the recompute
// after preemption, computed reset to 0) is any step with to_compute() > 1 or no token yet,
// and a decode step computes the single last-sampled token. A request handed off in P/D
// arrives with computed = prompt_len, generated = 1: its next step is a decode.
// Two cache lines hold what a step reads: the request's first (request.h) and the progress
// below, at the start of its own line (in a burst most states are cold when a step reads them).
struct alignas(64) RequestState {
  Request request;
  alignas(64) Tokens computed = 0;  // tokens whose KV is computed (held when running)
  Tokens generated = 0;             // output tokens produced
  Tokens cached = 0;                // of `computed`, tokens found in the prefix cache at admission
  // Tokens of the blocks s shares with running requests, which neither admitting nor
  // preempting it moves in or out of the free KV (vLLM's refcounted prefix blocks): waiting,
  // the leading full blocks of `cached` that running requests hold (admission takes no free
  // block for them); running, its blocks that others hold too (preempting it frees the rest).
  // 0 when unknown: every block counts as the request's own.
  Tokens shared = 0;
  Time first_token = std::nan("");
  Time last_token = std::nan("");

  Tokens num_tokens() const { return request.prompt_len + generated; }
  Tokens to_compute() const { return num_tokens() - computed; }
  bool in_prefill() const { return generated == 0 || to_compute() > 1; }
  Tokens context_len() const { return computed; }  // HFX l_cur, ProServe l_kv
};

}  // namespace slocore
