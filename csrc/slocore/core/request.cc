#include "slocore/core/request.h"

#include <cmath>

#include "slocore/core/errors.h"

namespace slocore {

namespace {
void check_len(Tokens v, const char* field, Tokens min) {
  if (!(v >= min && v <= kMaxTokens))
    fail(field, "must be in [" + std::to_string(min) + ", 2^40], got " + std::to_string(v));
}
}  // namespace

void validate(const Request& r) {
  if (r.id < 0) fail("id", "must be >= 0, got " + std::to_string(r.id));
  require_nonneg(r.arrival, "arrival");
  check_len(r.prompt_len, "prompt_len", 1);
  if (r.output_len) check_len(*r.output_len, "output_len", 1);
  if (r.expected_output_len) check_len(*r.expected_output_len, "expected_output_len", 1);
  if (r.max_output_len) check_len(*r.max_output_len, "max_output_len", 1);
  require_positive(r.slo.ttft, "slo.ttft");
  require_positive(r.slo.tpot, "slo.tpot");
  if (r.slo.deadline) {
    require_positive(*r.slo.deadline, "slo.deadline");
    require(std::isfinite(*r.slo.deadline), "slo.deadline", "must be finite");
  }
  if (r.priority < 0) fail("priority", "must be >= 0, got " + std::to_string(r.priority));
  require_positive(r.priority_weight, "priority_weight");
  require(std::isfinite(r.priority_weight), "priority_weight", "must be finite");
  require_nonneg(r.utility, "utility");
  Tokens covered = 0;
  for (const PrefixSegment& seg : r.prefix) {
    require(seg.len >= 1, "prefix", "segment lengths must be >= 1");
    covered += seg.len;
  }
  if (covered > r.prompt_len)
    fail("prefix",
         "segments cover " + std::to_string(covered) + " tokens, more than prompt_len " + std::to_string(r.prompt_len));
}

}  // namespace slocore
