// Policy parameters, declared once. Each policy, scheduler and scaler has a typed params
// struct with the paper's defaults and a member
//   template <class V> void visit(V& v) { v.field("theta", theta, "help", Range::closed(0, 1)); ... }
// listing every field once (name, help, accepted range or names). The visitors below turn
// that one list into everything else (the shape of Vidur's typed configs and llm-d's plugin
// factories): ParamReader parses a ParamMap into the struct with type and range checks whose
// messages name `owner.field` and rejects unknown names; ParamWriter gives params(), which
// the registry reads back unchanged; ParamDoc gives the table `slocore policies` prints.
// Cross-field constraints (lambda >= mu, ...) stay in each struct's validate().
#pragma once
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "slocore/core/errors.h"

namespace slocore {

using ParamValue = std::variant<double, std::string>;
using ParamMap = std::map<std::string, ParamValue>;

// Accepted values of a numeric parameter (each element of a list): finite, between lo and hi,
// either end open. The default accepts any finite number.
struct Range {
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  bool lo_open = false, hi_open = false;
  static Range at_least(double lo) { return {lo}; }
  static Range above(double lo) { return {lo, Range{}.hi, true}; }
  static Range closed(double lo, double hi) { return {lo, hi}; }
  static Range closed_open(double lo, double hi) { return {lo, hi, false, true}; }
  static Range open_closed(double lo, double hi) { return {lo, hi, true, false}; }
  static Range open(double lo, double hi) { return {lo, hi, true, true}; }
  bool contains(double x) const;
  std::string text() const;  // "[0, 1]", "> 0", ">= 1", "(0, 1]", "finite"
};

// Names of an enum-valued parameter, parsed once at construction (never compared in a loop).
template <class E>
using EnumNames = std::vector<std::pair<const char*, E>>;

template <class E>
const char* name_of(const EnumNames<E>& names, E e) {
  for (const auto& [n, v] : names)
    if (v == e) return n;
  return "?";
}

// One row of a parameter table (docs, `slocore policies`, slocore.policy_info).
struct ParamInfo {
  std::string name;
  std::string type;  // float | int | bool | str | list | one of the names
  ParamValue default_value;
  std::string help;
  std::string range;  // "[0, 1]", "a | c | p", ...
};

std::string format_number(double x);                // shortest text that parses back to x
std::string join_numbers(const std::vector<double>& xs);  // "0.7,1,2"

class ParamReader {
 public:
  ParamReader(std::string owner, ParamMap given) : owner_(std::move(owner)), given_(std::move(given)) {}

  // Reads `name` into `out` if given, checks the effective value either way.
  template <class T>
  void field(const char* name, T& out, const char* help, Range r = {});
  template <class E>
  void field(const char* name, E& out, const char* help, const EnumNames<E>& names);
  // Every given `<prefix>.<key>` goes to `out` as `<key>` (the parameters of a nested policy).
  void nested(const char* prefix, ParamMap& out, const char* help);

  // The untyped form, for entries not yet declared with visit().
  void get(const std::string& name, double& out);
  void get(const std::string& name, int& out);
  void get(const std::string& name, bool& out);
  void get(const std::string& name, std::string& out);

  // Throws InvalidArgument if a given name was never read (a typo must not pass silently).
  void finish() const;
  const ParamMap& effective() const { return effective_; }

 private:
  const ParamValue* find(const std::string& name);
  std::string where(const std::string& name) const { return owner_ + "." + name; }
  void number(const std::string& name, double& out, const Range& r, bool integer, double lo, double hi);
  void list(const std::string& name, std::vector<double>& out, const Range& r);
  std::string owner_;
  ParamMap given_;
  std::set<std::string> read_, prefixes_;
  ParamMap effective_;
};

class ParamWriter {
 public:
  template <class T>
  void field(const char* name, const T& v, const char*, Range = {}) {
    if constexpr (std::is_same_v<T, std::string>) out[name] = v;
    else if constexpr (std::is_same_v<T, std::vector<double>>) out[name] = join_numbers(v);
    else out[name] = double(v);
  }
  template <class E>
  void field(const char* name, const E& v, const char*, const EnumNames<E>& names) {
    out[name] = std::string(name_of(names, v));
  }
  void nested(const char* prefix, const ParamMap& m, const char*) {
    for (const auto& [k, v] : m) out[std::string(prefix) + "." + k] = v;
  }
  ParamMap out;
};

class ParamDoc {
 public:
  template <class T>
  void field(const char* name, const T& v, const char* help, Range r = {}) {
    ParamWriter w;
    w.field(name, v, help);
    const char* type = std::is_same_v<T, std::string>           ? "str"
                       : std::is_same_v<T, std::vector<double>> ? "list"
                       : std::is_same_v<T, bool>                ? "bool"
                       : std::is_integral_v<T>                  ? "int"
                                                                : "float";
    const bool numeric = !std::is_same_v<T, std::string> && !std::is_same_v<T, bool>;
    out.push_back({name, type, w.out.at(name), help, numeric ? r.text() : std::is_same_v<T, bool> ? "0 | 1" : ""});
  }
  template <class E>
  void field(const char* name, const E& v, const char* help, const EnumNames<E>& names) {
    std::string choices;
    for (const auto& nv : names) choices += (choices.empty() ? "" : " | ") + std::string(nv.first);
    out.push_back({name, "str", std::string(name_of(names, v)), help, choices});
  }
  void nested(const char* prefix, const ParamMap&, const char* help) {
    out.push_back({std::string(prefix) + ".*", "map", std::string(""), help, ""});
  }
  std::vector<ParamInfo> out;
};

// A policy without parameters.
struct NoParams {
  template <class V>
  void visit(V&) {}
};

// The struct `defaults` with `given` applied; throws InvalidArgument naming `owner.field`.
template <class P>
P read_params(const std::string& owner, const ParamMap& given, P p = {}) {
  ParamReader rd(owner, given);
  p.visit(rd);
  rd.finish();
  return p;
}

// Every field of `p` by name: what params() returns, and what read_params accepts back.
template <class P>
ParamMap write_params(P p) {
  ParamWriter w;
  p.visit(w);
  return std::move(w.out);
}

template <class P>
std::vector<ParamInfo> describe_params(P p = {}) {
  ParamDoc d;
  p.visit(d);
  return std::move(d.out);
}

// Range checks of a struct built in C++ rather than read (its validate() calls this).
template <class P>
void check_params(P p, const std::string& owner) {
  ParamReader rd(owner, {});
  p.visit(rd);
}

// ---- implementation ---------------------------------------------------------------------

template <class T>
void ParamReader::field(const char* name, T& out, const char*, Range r) {
  static_assert(!std::is_enum_v<T>, "an enum parameter needs its EnumNames");
  if constexpr (std::is_same_v<T, std::string>) {
    get(name, out);
  } else if constexpr (std::is_same_v<T, std::vector<double>>) {
    list(name, out, r);
  } else if constexpr (std::is_same_v<T, bool>) {
    get(name, out);
  } else if constexpr (std::is_integral_v<T>) {
    double d = double(out);
    number(name, d, r, true, double(std::numeric_limits<T>::lowest()), double(std::numeric_limits<T>::max()));
    out = T(d);
  } else {
    static_assert(std::is_floating_point_v<T>, "parameter fields are numbers, bools, strings, lists or enums");
    double d = out;
    number(name, d, r, false, -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity());
    out = T(d);
  }
}

template <class E>
void ParamReader::field(const char* name, E& out, const char*, const EnumNames<E>& names) {
  std::string s = name_of(names, out);
  get(name, s);
  std::string known;
  for (const auto& [n, v] : names) {
    if (s == n) {
      out = v;
      return;
    }
    known += (known.empty() ? "" : ", ") + std::string(n);
  }
  throw InvalidArgument(where(name) + ": must be one of " + known + ", got '" + s + "'");
}

}  // namespace slocore
