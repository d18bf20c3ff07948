// Shared scalar types and roles (docs/design.md "Contracts"): time is double seconds, token
// counts and ids are 64-bit integers chosen by the caller.
#pragma once
#include <cstdint>
#include <limits>
#include <string>

namespace slocore {

using Time = double;     // seconds; the caller passes `now`, no policy reads a clock
using Tokens = int64_t;  // token counts
using Id = int64_t;      // request / instance ids

inline constexpr Time kNever = std::numeric_limits<double>::infinity();
inline constexpr Id kNoInstance = -1;

enum class Role { Colocated = 0, Prefill = 1, Decode = 2 };

inline const char* role_name(Role r) {
  switch (r) {
    case Role::Colocated:
      return "colocated";
    case Role::Prefill:
      return "prefill";
    case Role::Decode:
      return "decode";
  }
  return "?";
}

}  // namespace slocore
