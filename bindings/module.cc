// slocore._core: the C++ core (csrc/) exposed to Python. Bindings only: no logic here.
#include "bindings.h"

#include "slocore/core/errors.h"

PYBIND11_MODULE(_core, m) {
  m.doc() = "slocore C++ core: SLO-aware scheduling policies, metrics and the cluster simulator";
  // UnknownId -> KeyError (InvalidArgument is a std::invalid_argument -> ValueError already).
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const slocore::UnknownId& e) {
      PyErr_SetString(PyExc_KeyError, e.what());
    }
  });
  init_core(m);
  init_interfaces(m);
  init_registry(m);
  init_sim(m);
  init_hfx(m);
  init_slice(m);
  init_proserve(m);
  init_sibyl(m);
  init_stack(m);
  init_serve(m);
}
