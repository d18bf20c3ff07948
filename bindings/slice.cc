// SLICE: decode mask, cycle estimate (Eq. 7), utility rate
// (Eq. 6) and task selection (Alg. 2) as standalone functions/classes; the scheduler itself
// is reached through the registry (make_batch_scheduler("slice", ...)).
#include <pybind11/stl.h>

#include "bindings.h"
#include "slocore/slice/decode_mask.h"

using namespace slocore;
using namespace slocore::slice;

void init_slice(py::module_& m) {
  m.def("slice_rate", &rate_of, py::arg("tpot"), "SLICE v_i = ceil(1/TPOT_i) tokens per cycle");
  m.def("slice_utility_rate", &utility_rate, py::arg("utility"), py::arg("tpot"), "SLICE Eq. 6: U_i * TPOT_i");
  py::class_<DecodeMask>(m, "DecodeMask")
      .def(py::init<const std::vector<int>&, bool>(), py::arg("rates"), py::arg("spread") = false)
      .def_property_readonly("rows", &DecodeMask::rows)
      .def_property_readonly("cols", &DecodeMask::cols)
      .def("row_task", &DecodeMask::row_task, py::arg("row"))
      .def(
          "at",
          [](const DecodeMask& d, size_t row, int col) {
            if (row >= d.rows() || col < 0 || col >= d.cols()) throw py::index_error("mask index out of range");
            return d.at(row, col);
          },
          py::arg("row"), py::arg("col"))
      .def(
          "column",
          [](const DecodeMask& d, int col) {
            if (col < 0 || col >= d.cols()) throw py::index_error("column out of range");
            return d.column(col);
          },
          py::arg("col"), "input positions of the tasks decoded in column `col`")
      .def("period", &DecodeMask::period, py::arg("latency"), "sum over columns of l(|column|) (Eq. 7)");
  m.def("slice_period_eq7", &period_eq7, py::arg("rates_desc"), py::arg("latency"), "SLICE Eq. 7");
  m.def(
      "select_slice_tasks",
      [](const std::vector<double>& tpots, const std::vector<double>& utilities, const BatchLatencyCurve& l,
         double max_cycle, bool spread) {
        if (tpots.size() != utilities.size()) throw py::value_error("utilities: need one per tpot");
        std::vector<SliceTask> t;
        for (size_t i = 0; i < tpots.size(); ++i) t.push_back({tpots[i], utilities[i]});
        return select_slice_tasks(t, l, max_cycle, spread);
      },
      py::arg("tpots"), py::arg("utilities"), py::arg("latency"), py::arg("max_cycle") = 1.0, py::arg("spread") = false,
      "SLICE Alg. 2: positions of the selected tasks in utility-rate order");
}
