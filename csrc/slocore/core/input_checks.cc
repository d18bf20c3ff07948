#include "slocore/core/input_checks.h"

#include <cmath>
#include <unordered_set>

#include "slocore/core/errors.h"
#include "slocore/core/id_index.h"

namespace slocore {

void check_time(double t, std::string_view field) { require_nonneg(t, field); }

void check_optional_time(double t, std::string_view field) {
  if (!std::isnan(t)) require_nonneg(t, field);
}

void check_duration(double s, std::string_view field) { require_nonneg(s, field); }

void check_tokens(int64_t v, std::string_view field, int64_t min) {
  if (!(v >= min && v <= kMaxTokens))
    fail(field, "must be in [" + std::to_string(min) + ", 2^40], got " + std::to_string(v));
}

void check_id(int64_t id, std::string_view field) {
  if (id < 0) fail(field, "must be >= 0, got " + std::to_string(id));
}

void check_view(const InstanceView& v) {
  try {
    v.validate();  // every request's fields and token counts
    IdIndex seen;
    seen.clear(v.num_requests());
    v.for_each_request([&](const RequestState& s, bool) {
      if (!seen.insert(s.request.id, 0))
        fail("request.id", "duplicate id " + std::to_string(s.request.id) + " in running + waiting");
    });
  } catch (const InvalidArgument& e) {
    throw InvalidArgument("view of instance " + std::to_string(v.id) + ": " + e.what());
  }
}

void check_views(const std::vector<InstanceView>& views) {
  std::unordered_set<Id> ids;
  for (const InstanceView& v : views) {
    check_view(v);
    require(ids.insert(v.id).second, "views", "duplicate instance id " + std::to_string(v.id));
  }
}

}  // namespace slocore
