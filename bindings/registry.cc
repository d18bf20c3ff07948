// Registries: policies, batch schedulers and scalers by name with a dict of parameters.
#include <pybind11/stl.h>

#include "bindings.h"
#include "slocore/batch/registry.h"
#include "slocore/policy/registry.h"
#include "slocore/scale/registry.h"

using namespace slocore;

void init_registry(py::module_& m) {
  m.def("make_global_policy", &make_global_policy, py::arg("name"), py::arg("params") = ParamMap{},
        "A global policy by name; params: dict of str -> float|str. ValueError on unknown names.");
  m.def("global_policy_names", &global_policy_names);
  m.def("make_batch_scheduler", &make_batch_scheduler, py::arg("name"), py::arg("params") = ParamMap{});
  m.def("batch_scheduler_names", &batch_scheduler_names);
  m.def("make_scaler", &make_scaler, py::arg("name"), py::arg("params") = ParamMap{});
  m.def("scaler_names", &scaler_names);
}
