#include "slocore/core/params.h"

#include <cmath>

namespace slocore {

const ParamValue* ParamReader::find(const std::string& name) {
  read_.insert(name);
  auto it = given_.find(name);
  return it == given_.end() ? nullptr : &it->second;
}

void ParamReader::get(const std::string& name, double& out) {
  if (const ParamValue* v = find(name)) {
    const double* d = std::get_if<double>(v);
    require(d != nullptr, owner_ + "." + name, "must be a number");
    require(!std::isnan(*d), owner_ + "." + name, "must not be NaN");
    out = *d;
  }
  effective_[name] = out;
}

void ParamReader::get(const std::string& name, int& out) {
  double d = out;
  get(name, d);
  require(std::floor(d) == d && std::abs(d) < 1e9, owner_ + "." + name, "must be an integer");
  out = static_cast<int>(d);
}

void ParamReader::get(const std::string& name, bool& out) {
  double d = out ? 1.0 : 0.0;
  get(name, d);
  require(d == 0.0 || d == 1.0, owner_ + "." + name, "must be 0/1 (false/true)");
  out = d != 0.0;
}

void ParamReader::get(const std::string& name, std::string& out) {
  if (const ParamValue* v = find(name)) {
    const std::string* s = std::get_if<std::string>(v);
    require(s != nullptr, owner_ + "." + name, "must be a string");
    out = *s;
  }
  effective_[name] = out;
}

void ParamReader::finish() const {
  for (const auto& kv : given_) {
    if (read_.count(kv.first)) continue;
    std::string known;
    for (const auto& r : read_) known += (known.empty() ? "" : ", ") + r;
    throw InvalidArgument(owner_ + "." + kv.first + ": unknown parameter (known: " + known + ")");
  }
}

}  // namespace slocore
