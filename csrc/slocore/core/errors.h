// Errors raised on bad input at the library boundary (docs/design.md "Contracts"): the message
// names the offending field. The binding maps InvalidArgument -> ValueError and
// UnknownId -> KeyError; C++ never aborts on user input.
#pragma once
#include <cmath>
#include <stdexcept>
#include <string>
#include <string_view>

namespace slocore {

struct InvalidArgument : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

struct UnknownId : std::out_of_range {
  using std::out_of_range::out_of_range;
};

// Helpers that keep validation one line per field. They sit on hot paths (every token of a
// simulation), so nothing is formatted unless the check fails
// (a message built from values: `if (!ok) fail(field, "..." + std::to_string(x));`).
[[noreturn]] inline void fail(std::string_view field, std::string_view what) {
  throw InvalidArgument(std::string(field) + ": " + std::string(what));
}
inline void require(bool ok, std::string_view field, std::string_view what) {
  if (!ok) fail(field, what);
}
inline void require_finite(double v, std::string_view field) {
  if (!std::isfinite(v)) throw InvalidArgument(std::string(field) + ": must be finite, got " + std::to_string(v));
}
inline void require_positive(double v, std::string_view field) {
  if (!(!std::isnan(v) && v > 0)) throw InvalidArgument(std::string(field) + ": must be > 0, got " + std::to_string(v));
}
inline void require_nonneg(double v, std::string_view field) {
  if (!(std::isfinite(v) && v >= 0))
    throw InvalidArgument(std::string(field) + ": must be finite and >= 0, got " + std::to_string(v));
}

}  // namespace slocore
