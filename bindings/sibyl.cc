// SIBYL: survival-based decode-instance assignment: the types Python needs beyond the registry (nothing yet).
#include "bindings.h"

void init_sibyl(py::module_& m) { (void)m; }
