#include "slocore/core/params.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace slocore {

bool Range::contains(double x) const {
  if (!std::isfinite(x)) return false;
  if (lo_open ? !(x > lo) : !(x >= lo)) return false;
  return hi_open ? x < hi : x <= hi;
}

std::string Range::text() const {
  const bool has_lo = std::isfinite(lo), has_hi = std::isfinite(hi);
  if (has_lo && has_hi)
    return std::string(lo_open ? "(" : "[") + format_number(lo) + ", " + format_number(hi) + (hi_open ? ")" : "]");
  if (has_lo) return std::string(lo_open ? "> " : ">= ") + format_number(lo);
  if (has_hi) return std::string(hi_open ? "< " : "<= ") + format_number(hi);
  return "finite";
}

std::string format_number(double x) {
  char buf[40];
  for (int precision : {6, 15, 17}) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, x);
    if (std::strtod(buf, nullptr) == x) break;
  }
  return buf;
}

std::string join_numbers(const std::vector<double>& xs) {
  std::string out;
  for (size_t i = 0; i < xs.size(); ++i) out += (i ? "," : "") + format_number(xs[i]);
  return out;
}

const ParamValue* ParamReader::find(const std::string& name) {
  read_.insert(name);
  auto it = given_.find(name);
  return it == given_.end() ? nullptr : &it->second;
}

void ParamReader::number(const std::string& name, double& out, const Range& r, bool integer, double lo, double hi) {
  get(name, out);
  if (integer) {
    require(std::floor(out) == out && std::abs(out) <= 9007199254740992.0 && out >= lo && out <= hi, where(name),
            "must be an integer, got " + format_number(out));
  }
  require(r.contains(out), where(name), "must be " + r.text() + ", got " + format_number(out));
}

void ParamReader::list(const std::string& name, std::vector<double>& out, const Range& r) {
  std::string text = join_numbers(out);
  get(name, text);
  std::vector<double> xs;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, end - start);
    char* stop = nullptr;
    const double x = std::strtod(item.c_str(), &stop);
    while (stop && *stop == ' ') ++stop;
    require(!item.empty() && stop && *stop == '\0', where(name),
            "must be comma-separated numbers like '0.7,1,2', got '" + text + "'");
    require(r.contains(x), where(name), "each value must be " + r.text() + ", got " + format_number(x));
    xs.push_back(x);
    start = end + 1;
  }
  out = std::move(xs);
  effective_[name] = join_numbers(out);
}

void ParamReader::nested(const char* prefix, ParamMap& out, const char*) {
  const std::string p = std::string(prefix) + ".";
  prefixes_.insert(p);
  for (const auto& [k, v] : given_)
    if (k.compare(0, p.size(), p) == 0) out[k.substr(p.size())] = v;
  for (const auto& [k, v] : out) effective_[p + k] = v;
}

void ParamReader::get(const std::string& name, double& out) {
  if (const ParamValue* v = find(name)) {
    const double* d = std::get_if<double>(v);
    require(d != nullptr, where(name), "must be a number");
    require(!std::isnan(*d), where(name), "must not be NaN");
    out = *d;
  }
  effective_[name] = out;
}

void ParamReader::get(const std::string& name, int& out) {
  double d = out;
  get(name, d);
  require(std::floor(d) == d && std::abs(d) < 1e9, where(name), "must be an integer");
  out = static_cast<int>(d);
}

void ParamReader::get(const std::string& name, bool& out) {
  double d = out ? 1.0 : 0.0;
  get(name, d);
  require(d == 0.0 || d == 1.0, where(name), "must be 0/1 (false/true)");
  out = d != 0.0;
}

void ParamReader::get(const std::string& name, std::string& out) {
  if (const ParamValue* v = find(name)) {
    const std::string* s = std::get_if<std::string>(v);
    require(s != nullptr, where(name), "must be a string");
    out = *s;
  }
  effective_[name] = out;
}

void ParamReader::finish() const {
  for (const auto& kv : given_) {
    if (read_.count(kv.first)) continue;
    bool nested = false;
    for (const auto& p : prefixes_) nested = nested || kv.first.compare(0, p.size(), p) == 0;
    if (nested) continue;
    std::string known;
    for (const auto& r : read_) known += (known.empty() ? "" : ", ") + r;
    for (const auto& p : prefixes_) known += (known.empty() ? "" : ", ") + p + "*";
    throw InvalidArgument(where(kv.first) + ": unknown parameter (known: " + (known.empty() ? "none" : known) + ")");
  }
}

}  // namespace slocore
