// ProServe: TDG token deadline/weight (Eq. 3) and GETMAXCHUNK as
// standalone functions; SlideBatching and GoRouting are reached through the registries.
#include <pybind11/stl.h>

#include "bindings.h"
#include "slocore/core/input_checks.h"
#include "slocore/proserve/slide_batching.h"

using namespace slocore;
using namespace slocore::proserve;

void init_proserve(py::module_& m) {
  m.def(
      "tdg_token_deadline",
      [](const Request& r, Tokens i) {
        if (i < 1) throw py::value_error("i: token index must be >= 1");
        return token_deadline(r, i);
      },
      py::arg("request"), py::arg("i"), "ProServe Eq. 3: arrival + TTFT + (i-1) * TPOT");
  m.def(
      "tdg_token_weight",
      [](const Request& r, Tokens i, double w_prefill, double w_decode) {
        if (i < 1) throw py::value_error("i: token index must be >= 1");
        return token_weight(r, i, TdgWeights{w_prefill, w_decode});
      },
      py::arg("request"), py::arg("i"), py::arg("w_prefill") = 1.0, py::arg("w_decode") = 1.0,
      "ProServe Eq. 3: w_prio * (w_p if i == 1 else w_d)");
  m.def(
      "slide_max_chunk",
      [](const LatencyModel& m, const RequestState& s, double time_left) {
        validate(s.request);
        check_tokens(s.generated, "state.generated");
        require(s.computed >= 0 && s.computed <= s.num_tokens(), "state.computed", "must be in [0, num_tokens]");
        require(!std::isnan(time_left), "time_left", "must not be NaN");
        return max_chunk(m, s, time_left);
      },
      py::arg("model"), py::arg("state"), py::arg("time_left"),
      "SlideBatching GETMAXCHUNK: the largest prefill chunk whose estimated time fits time_left");
}
