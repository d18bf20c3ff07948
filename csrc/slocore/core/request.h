// The request: what a caller knows on arrival (docs/design.md "Contracts"). Progress (tokens
// prefilled/generated, token times) is state the engine or simulator reports back; see
// RequestState in instance_view.h and Recorder in recorder.h.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "slocore/core/types.h"

namespace slocore {

// Latency targets, seconds. +inf means "no target". `deadline` is end-to-end, relative to
// arrival (SLICE real-time tasks); absent for ordinary requests.
struct Slo {
  double ttft = kNever;
  double tpot = kNever;
  std::optional<double> deadline;
};

// Prefix identity (prefix caching): `len` prompt tokens equal to the first `len` tokens of
// a shared text `group` (a system prompt, a document, a chat session's history). Two
// prompts share a KV block exactly when their segments agree up to that block's end, as
// vLLM's chained block hashes do for equal token prefixes (see core/prefix.h).
struct PrefixSegment {
  uint64_t group = 0;
  Tokens len = 0;
};

struct Request {
  // What every step reads first (id, arrival, prompt and output lengths, SLO: 72 bytes), so
  // that in a RequestState (request_state.h) all but the deadline's flag share its first line.
  Id id = 0;
  Time arrival = 0.0;
  Tokens prompt_len = 1;
  // The length the request will really generate when known (simulation, traces); policies
  // must not peek at it unless they model an oracle. `expected_output_len` is a prediction
  // a policy may use; `max_output_len` is the client's cap.
  std::optional<Tokens> output_len;
  Slo slo;
  std::optional<Tokens> expected_output_len;
  std::optional<Tokens> max_output_len;
  int priority = 0;              // 0 is the highest
  double priority_weight = 1.0;  // ProServe w_{p(r)}
  double utility = 1.0;          // SLICE u_i
  std::string task;              // task / tenant tag
  // The prompt as segments of shared text, in order (empty: no identity, never cached).
  // Their lengths sum to at most prompt_len; tokens past them are unique to this request.
  std::vector<PrefixSegment> prefix;

  bool realtime() const { return slo.deadline.has_value(); }
  // Best knowledge of the total output length: true > expected > cap > fallback.
  Tokens output_len_or(Tokens fallback) const {
    if (output_len) return *output_len;
    if (expected_output_len) return *expected_output_len;
    if (max_output_len) return *max_output_len;
    return fallback;
  }
};

// Upper bound on any token count we accept (2^40 tokens); larger means a caller bug.
inline constexpr Tokens kMaxTokens = Tokens(1) << 40;

// Throws InvalidArgument naming the field on NaN, negative or absurd values.
void validate(const Request& r);

}  // namespace slocore
