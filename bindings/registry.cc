// Registries: policies, batch schedulers and scalers by name with a dict of parameters.
#include <pybind11/stl.h>

#include "bindings.h"
#include "slocore/batch/registry.h"
#include "slocore/policy/registry.h"
#include "slocore/scale/registry.h"

using namespace slocore;

namespace {

py::dict info_dict(const RegistryInfo& info) {
  py::list params;
  for (const ParamInfo& p : info.params)
    params.append(py::dict(py::arg("name") = p.name, py::arg("type") = p.type, py::arg("default") = p.default_value,
                           py::arg("help") = p.help, py::arg("range") = p.range));
  return py::dict(py::arg("name") = info.name, py::arg("summary") = info.summary, py::arg("params") = params);
}

}  // namespace

void init_registry(py::module_& m) {
  m.def("make_global_policy", &make_global_policy, py::arg("name"), py::arg("params") = ParamMap{},
        "A global policy by name; params: dict of str -> float|str. ValueError on unknown names.");
  m.def("global_policy_names", &global_policy_names);
  m.def("make_batch_scheduler", &make_batch_scheduler, py::arg("name"), py::arg("params") = ParamMap{});
  m.def("batch_scheduler_names", &batch_scheduler_names);
  m.def("make_scaler", &make_scaler, py::arg("name"), py::arg("params") = ParamMap{});
  m.def("scaler_names", &scaler_names);
  m.def(
      "policy_info",
      [](const std::string& kind, const std::string& name) {
        if (kind == "global_policy") return info_dict(global_policy_info(name));
        if (kind == "batch_scheduler") return info_dict(batch_scheduler_info(name));
        if (kind == "scaler") return info_dict(scaler_info(name));
        throw InvalidArgument("kind: must be global_policy, batch_scheduler or scaler, got '" + kind + "'");
      },
      py::arg("kind"), py::arg("name"),
      "The registry entry `name` of `kind` (global_policy | batch_scheduler | scaler): {name, summary, params: "
      "[{name, type, default, help, range}]}, the one parameter table its factory and params() use.");
}
