// Errors raised on bad input at the library boundary (docs/design.md "Contracts"): the message
// names the offending field. The binding maps InvalidArgument -> ValueError and
// UnknownId -> KeyError; C++ never aborts on user input.
#pragma once
#include <cmath>
#include <stdexcept>
#include <string>

namespace slocore {

struct InvalidArgument : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

struct UnknownId : std::out_of_range {
  using std::out_of_range::out_of_range;
};

// Helpers that keep validation one line per field.
inline void require(bool ok, const std::string& field, const std::string& what) {
  if (!ok) throw InvalidArgument(field + ": " + what);
}
inline void require_finite(double v, const std::string& field) {
  require(std::isfinite(v), field, "must be finite, got " + std::to_string(v));
}
inline void require_positive(double v, const std::string& field) {
  require(!std::isnan(v) && v > 0, field, "must be > 0, got " + std::to_string(v));
}
inline void require_nonneg(double v, const std::string& field) {
  require(std::isfinite(v) && v >= 0, field, "must be finite and >= 0, got " + std::to_string(v));
}

}  // namespace slocore
