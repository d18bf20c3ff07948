// SLICE: decode mask, cycle estimate (Eq. 7), utility rate
// (Eq. 6) and task selection (Alg. 2) as standalone functions/classes; the scheduler itself
// is reached through the registry (make_batch_scheduler("slice", ...)).
#include <pybind11/stl.h>

#include <cmath>

#include "bindings.h"
#include "slocore/core/errors.h"
#include "slocore/core/input_checks.h"
#include "slocore/slice/decode_mask.h"

using namespace slocore;
using namespace slocore::slice;

void init_slice(py::module_& m) {
  m.def("slice_rate", &rate_of, py::arg("tpot"), "SLICE v_i = ceil(1/TPOT_i) tokens per cycle");
  m.def(
      "slice_utility_rate",
      [](double utility, double tpot) {
        require(std::isfinite(utility) && utility >= 0, "utility", "must be finite and >= 0");
        require_positive(tpot, "tpot");
        return utility_rate(utility, tpot);
      },
      py::arg("utility"), py::arg("tpot"), "SLICE Eq. 6: U_i * TPOT_i");
  py::class_<DecodeMask>(m, "DecodeMask")
      .def(py::init<const std::vector<int>&, bool>(), py::arg("rates"), py::arg("spread") = false)
      .def_property_readonly("rows", &DecodeMask::rows)
      .def_property_readonly("cols", &DecodeMask::cols)
      .def(
          "row_task",
          [](const DecodeMask& d, size_t row) {
            if (row >= d.rows()) throw py::index_error("row: out of range [0, " + std::to_string(d.rows()) + ")");
            return d.row_task(row);
          },
          py::arg("row"))
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
  m.def(
      "slice_period_eq7",
      [](const std::vector<int>& rates, const BatchLatencyCurve& l) {
        for (size_t i = 0; i < rates.size(); ++i) {
          require(rates[i] >= 1 && rates[i] <= kMaxSliceRate, "rates_desc",
                  "must be in [1, " + std::to_string(kMaxSliceRate) + "]");
          require(i == 0 || rates[i] <= rates[i - 1], "rates_desc", "must be sorted in descending order");
        }
        return period_eq7(rates, l);
      },
      py::arg("rates_desc"), py::arg("latency"), "SLICE Eq. 7");
  m.def(
      "select_slice_tasks",
      [](const std::vector<double>& tpots, const std::vector<double>& utilities, const BatchLatencyCurve& l,
         double max_cycle, bool spread, int64_t max_tasks) {
        if (tpots.size() != utilities.size()) throw py::value_error("utilities: need one per tpot");
        require(max_tasks >= 0, "max_tasks", "must be >= 0");
        require(tpots.size() <= kMaxSliceTasks, "tpots", "at most " + std::to_string(kMaxSliceTasks) + " tasks");
        require(!std::isnan(max_cycle) && max_cycle > 0, "max_cycle", "must be > 0");
        std::vector<SliceTask> t;
        for (size_t i = 0; i < tpots.size(); ++i) t.push_back({tpots[i], utilities[i]});
        return select_slice_tasks(t, l, max_cycle, spread, size_t(max_tasks));
      },
      py::arg("tpots"), py::arg("utilities"), py::arg("latency"), py::arg("max_cycle") = 1.0, py::arg("spread") = false,
      py::arg("max_tasks") = int64_t(1) << 30, "SLICE Alg. 2: positions of the selected tasks in utility-rate order");
}
