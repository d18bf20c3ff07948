// ProServe: TDG, SlideBatching, GoRouting: the types Python needs beyond the registry (nothing yet).
#include "bindings.h"

void init_proserve(py::module_& m) { (void)m; }
