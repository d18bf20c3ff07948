// A name -> factory table shared by the three registries; the error lists valid names.
#pragma once
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "slocore/core/params.h"

namespace slocore {

template <class T>
struct RegistryEntry {
  const char* name;
  const char* summary;  // one line: what it is and its source
  std::function<std::shared_ptr<T>(const ParamMap&)> make;
};

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
