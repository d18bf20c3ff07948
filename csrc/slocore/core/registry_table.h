// A name -> factory table shared by the three registries; the error lists valid names.
// An entry is made with registered<Interface, Class>(name, summary, Params{...}): one line per
// policy in its family's registry.cc. It checks at compile time that Class implements the
// registry's interface and is built from its params struct, and derives the factory (read,
// check, reject unknown names) and the parameter table from the struct's visit().
#pragma once
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "slocore/core/params.h"

namespace slocore {

template <class T>
struct RegistryEntry {
  const char* name;
  const char* summary;  // one line: what it is and its source
  std::function<std::shared_ptr<T>(const ParamMap&)> make;
  std::function<std::vector<ParamInfo>()> describe = nullptr;  // the parameter table
};

// What `slocore policies` prints for one entry.
struct RegistryInfo {
  std::string name, summary;
  std::vector<ParamInfo> params;
};

// `make(params)` builds the object from its checked params struct (any extra constructor
// arguments, such as a stage or a variant flag, are bound in the lambda).
template <class Base, class Impl, class Params, class Make>
RegistryEntry<Base> registered(const char* name, const char* summary, Params defaults, Make make) {
  static_assert(std::is_base_of_v<Base, Impl>, "a registered class must derive from the registry's interface");
  static_assert(std::is_invocable_r_v<std::shared_ptr<Impl>, Make, const Params&>,
                "make(params) must return std::shared_ptr<Class>");
  return {name, summary,
          [=](const ParamMap& given) -> std::shared_ptr<Base> { return make(read_params(name, given, defaults)); },
          [=] { return describe_params(defaults); }};
}

// The common case: Class(Params).
template <class Base, class Impl, class Params>
RegistryEntry<Base> registered(const char* name, const char* summary, Params defaults) {
  static_assert(std::is_constructible_v<Impl, const Params&>, "the registered class must be built from its Params");
  return registered<Base, Impl>(name, summary, defaults, [](const Params& p) { return std::make_shared<Impl>(p); });
}

// A class without parameters: Class().
template <class Base, class Impl>
RegistryEntry<Base> registered(const char* name, const char* summary) {
  static_assert(std::is_default_constructible_v<Impl>, "a class without Params must be default-constructible");
  return registered<Base, Impl>(name, summary, NoParams{}, [](const NoParams&) { return std::make_shared<Impl>(); });
}

template <class T>
std::shared_ptr<T> make_from(const std::vector<RegistryEntry<T>>& table, const char* kind,
                             const std::string& name, const ParamMap& params) {
  std::string known;
  for (const auto& e : table) {
    if (name == e.name) return e.make(params);
    known += (known.empty() ? "" : ", ") + std::string(e.name);
  }
  throw InvalidArgument(std::string(kind) + ": unknown name '" + name + "' (known: " + known + ")");
}

template <class T>
RegistryInfo info_from(const std::vector<RegistryEntry<T>>& table, const char* kind, const std::string& name) {
  for (const auto& e : table)
    if (name == e.name) return {e.name, e.summary, e.describe ? e.describe() : std::vector<ParamInfo>{}};
  make_from(table, kind, name, {});  // throws, listing the known names
  return {};
}

// The parts (baselines, then each paper's family) joined into one table.
template <class T>
std::vector<RegistryEntry<T>> joined(std::initializer_list<std::vector<RegistryEntry<T>>> parts) {
  std::vector<RegistryEntry<T>> all;
  for (const auto& part : parts) all.insert(all.end(), part.begin(), part.end());
  return all;
}

template <class T>
std::vector<std::string> names_of(const std::vector<RegistryEntry<T>>& table) {
  std::vector<std::string> out;
  for (const auto& e : table) out.push_back(e.name);
  return out;
}

}  // namespace slocore
