// The slocore stack's dispatch prediction (stack/slo_predict.h), for the differential test of
// the kept per-instance queue against the rescan.
#include <pybind11/stl.h>

#include <tuple>

#include "bindings.h"
#include "slocore/stack/slo_predict.h"

using namespace slocore;
using namespace slocore::stack;

namespace {

// (deadline, tokens, cost, context) per pending prefill placed this poll.
using ExtraTuple = std::tuple<double, Tokens, double, Tokens>;

std::vector<PendingPrefill> extras_of(const std::vector<ExtraTuple>& extra) {
  std::vector<PendingPrefill> out;
  for (const auto& [d, t, c, ctx] : extra) out.push_back({d, t, c, ctx});
  return out;
}

SloPredictParams params_of(bool fifo) {
  SloPredictParams p;
  p.order = fifo ? QueueOrder::Fifo : QueueOrder::Deadline;
  return p;
}

}  // namespace

void init_stack(py::module_& m) {
  py::class_<SloPrediction>(m, "SloPrediction")
      .def_readonly("ttft", &SloPrediction::ttft)
      .def_readonly("tpot", &SloPrediction::tpot)
      .def_readonly("loss", &SloPrediction::loss)
      .def_readonly("slack", &SloPrediction::slack)
      .def_readonly("finish", &SloPrediction::finish)
      .def_readonly("cached", &SloPrediction::cached)
      .def_readonly("saved", &SloPrediction::saved)
      .def_readonly("outstanding", &SloPrediction::outstanding);
  m.def(
      "slo_predict_rescan",
      [](bool fifo, const InstanceView& v, const Request& r, Tokens cached, Time now,
         const std::vector<ExtraTuple>& extra) {
        return predict_slo(params_of(fifo), v, r, cached, now, extras_of(extra));
      },
      py::arg("fifo"), py::arg("view"), py::arg("request"), py::arg("cached"), py::arg("now"), py::arg("extra"),
      "slo_predict's prediction for request on view, rebuilt from the view (extra: this poll's placements as "
      "(deadline, tokens, cost, context))");
  py::class_<PendingQueue>(m, "SloPendingQueue", "slo_predict's per-instance queue kept while the view's epoch holds")
      .def(py::init<>())
      .def(
          "sync",
          [](PendingQueue& q, bool fifo, const InstanceView& v, const std::vector<ExtraTuple>& extra, uint64_t poll) {
            return q.sync(params_of(fifo), v, extras_of(extra), poll);
          },
          py::arg("fifo"), py::arg("view"), py::arg("extra"), py::arg("poll"))
      .def("predict", &PendingQueue::predict, py::arg("view"), py::arg("request"), py::arg("cached"), py::arg("now"));
}
