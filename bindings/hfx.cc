// HFX (HyperFlexis): dispatcher, P/D dispatcher + migrator, priority mapper, scaler: the types Python needs beyond the registry (nothing yet).
#include "bindings.h"

void init_hfx(py::module_& m) { (void)m; }
