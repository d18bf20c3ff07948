// One init function per csrc folder; module.cc calls them in dependency order.
#pragma once
#include <pybind11/pybind11.h>

namespace py = pybind11;

void init_core(py::module_& m);
void init_interfaces(py::module_& m);
void init_registry(py::module_& m);
void init_sim(py::module_& m);
// One per paper, each in its own file.
void init_hfx(py::module_& m);
void init_slice(py::module_& m);
void init_proserve(py::module_& m);
void init_sibyl(py::module_& m);
void init_stack(py::module_& m);  // the slocore stack (csrc/slocore/stack)
void init_serve(py::module_& m);  // the router's data path (csrc/slocore/serve)
