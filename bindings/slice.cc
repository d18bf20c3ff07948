// SLICE: utility-rate selection and decode mask: the types Python needs beyond the registry (nothing yet).
#include "bindings.h"

void init_slice(py::module_& m) { (void)m; }
