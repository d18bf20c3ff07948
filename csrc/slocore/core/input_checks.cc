#include "slocore/core/input_checks.h"

#include <cmath>
#include <unordered_set>

#include "slocore/core/errors.h"

namespace slocore {

void check_time(double t, const std::string& field) { require_nonneg(t, field); }

void check_optional_time(double t, const std::string& field) {
  if (!std::isnan(t)) require_nonneg(t, field);
}

void check_duration(double s, const std::string& field) { require_nonneg(s, field); }

void check_tokens(int64_t v, const std::string& field, int64_t min) {
  require(v >= min && v <= kMaxTokens, field,
          "must be in [" + std::to_string(min) + ", 2^40], got " + std::to_string(v));
}

void check_id(int64_t id, const std::string& field) {
  require(id >= 0, field, "must be >= 0, got " + std::to_string(id));
}

void check_view(const InstanceView& v) {
  try {
    std::unordered_set<Id> seen;
    v.for_each_request([&](const RequestState& s, bool) {  // token counts first: validate() adds them
      validate(s.request);
      check_tokens(s.generated, "generated");
      require(seen.insert(s.request.id).second, "request.id",
              "duplicate id " + std::to_string(s.request.id) + " in running + waiting");
    });
    v.validate();
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
