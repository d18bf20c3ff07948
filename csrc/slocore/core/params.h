// Policy parameters by name (CONVENTIONS.md: "typed parameter structs that have the
// paper's defaults and are printed in every report"). A registry turns a ParamMap into a
// policy's typed struct with ParamReader, which rejects unknown names and wrong types.
#pragma once
#include <map>
#include <set>
#include <string>
#include <variant>

#include "slocore/core/errors.h"

namespace slocore {

using ParamValue = std::variant<double, std::string>;
using ParamMap = std::map<std::string, ParamValue>;

class ParamReader {
 public:
  ParamReader(std::string owner, const ParamMap& given) : owner_(std::move(owner)), given_(given) {}

  // Reads `name` into `out` if given; records the effective value either way.
  void get(const std::string& name, double& out);
  void get(const std::string& name, int& out);
  void get(const std::string& name, bool& out);
  void get(const std::string& name, std::string& out);

  // Throws InvalidArgument if a given name was never read (a typo must not pass silently).
  void finish() const;
  const ParamMap& effective() const { return effective_; }

 private:
  const ParamValue* find(const std::string& name);
  std::string owner_;
  const ParamMap& given_;
  std::set<std::string> read_;
  ParamMap effective_;
};

}  // namespace slocore
