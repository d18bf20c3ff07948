// HFX (HyperFlexis): the formulas, the priority mapper and introspection of the registered
// policies. Policies themselves come from the registry (make_global_policy("hfx", ...));
// no py::class_ derives from the trampolined GlobalPolicy here (pybind11 cannot hand a
// trampolined class back as its C++ subclass).
#include <pybind11/stl.h>

#include "bindings.h"
#include "slocore/core/input_checks.h"
#include "slocore/hfx/cold_start.h"
#include "slocore/hfx/dispatcher.h"
#include "slocore/hfx/pm_dispatcher.h"
#include "slocore/hfx/priority_mapper.h"
#include "slocore/hfx/scaler.h"

using namespace slocore;
using namespace slocore::hfx;

namespace {

template <class T>
T& as(GlobalPolicy& p, const char* what) {
  T* t = dynamic_cast<T*>(&p);
  require(t != nullptr, "policy", std::string("expected an HFX ") + what + " policy, got '" + p.name() + "'");
  return *t;
}

}  // namespace

void init_hfx(py::module_& m) {
  m.def(
      "hfx_token_budget",
      [](double ttft, double tpot, double e_d, double a, double b) {
        require_positive(ttft, "ttft");
        require_positive(tpot, "tpot");
        check_duration(e_d, "e_d");
        check_duration(a, "a");
        check_duration(b, "b");
        return token_budget(ttft, tpot, e_d, a, b);
      },
      py::arg("ttft"), py::arg("tpot"), py::arg("e_d"), py::arg("a"), py::arg("b"),
      "HFX Eq. 5: largest prefill token count that keeps the tightest TTFT/TPOT.");
  m.def(
      "hfx_admission_p",
      [](Time arrival, double ttft, double prefill_s, Time now, double util, double util_exp) {
        check_time(arrival, "arrival");
        require_positive(ttft, "ttft");
        check_duration(prefill_s, "prefill_s");
        check_time(now, "now");
        require_finite(util, "util");
        check_duration(util_exp, "util_exp");
        return admission_p(arrival, ttft, prefill_s, now, util, util_exp);
      },
      py::arg("arrival"), py::arg("ttft"), py::arg("prefill_s"), py::arg("now"), py::arg("util") = 0.0,
      py::arg("util_exp") = 0.0, "HFX Alg. 1 calculate_p: clamp(slack / TTFT, 0, 1) * (1 - util)^util_exp.");
  m.def(
      "hfx_maturity_time",
      [](Time now, double e_p, double e_d, double min_tpot) {
        check_time(now, "now");
        check_duration(e_p, "e_p");
        check_duration(e_d, "e_d");
        require_positive(min_tpot, "min_tpot");
        return maturity_time(now, e_p, e_d, min_tpot);
      },
      py::arg("now"), py::arg("e_p"), py::arg("e_d"), py::arg("min_tpot"),
      "HFX Alg. 1 maturity: now + E_p + (E_p / relax) * E_d, relax = min TPOT - E_d.");
  m.def(
      "hfx_maturity",
      [](GlobalPolicy& p, Id instance) -> Time { return as<Dispatcher>(p, "dispatcher").maturity(instance); },
      py::arg("policy"), py::arg("instance"), "Maturity time of `instance` in an hfx/hfx_prefill/hfx_migrator policy.");
  m.def(
      "hfx_last_budget",
      [](GlobalPolicy& p, Id instance) { return as<Dispatcher>(p, "dispatcher").last_budget(instance); },
      py::arg("policy"), py::arg("instance"), "The token budget (decode stage: slots) last computed for `instance`.");
  m.def(
      "hfx_assigned_slos", [](GlobalPolicy& p) { return as<PmDispatcher>(p, "hfx_pm").assigned(); }, py::arg("policy"),
      "(request id, TTFT, TPOT) that an hfx_pm policy assigned, in submit order.");

  m.def("hfx_cold_start_table", &cold_start_table, "HFX Table 2: model class -> weight source -> seconds.");
  m.def("hfx_cold_start_seconds", &cold_start_seconds, py::arg("model"), py::arg("source"));
  m.def(
      "hfx_kv_load",
      [](const InstanceView& v) {
        check_view(v);
        return kv_load(v);
      },
      py::arg("view"), "HFX scaler indicator 3: (used + reserved KV) / total.");
  m.def(
      "hfx_scaler_indicators",
      [](Scaler& s, int stage, Time now, const std::vector<InstanceView>& views) {
        auto* h = dynamic_cast<HfxScaler*>(&s);
        require(h != nullptr, "scaler", "expected the hfx scaler, got '" + s.name() + "'");
        require(stage >= 0 && stage <= 2, "stage", "must be 0 (colocated), 1 (prefill) or 2 (decode)");
        check_time(now, "now");
        check_views(views);
        const auto I = h->indicators(stage, now, views);
        return py::dict(py::arg("rate_ratio") = I.rate_ratio, py::arg("rate_valid") = I.rate_valid,
                        py::arg("norm_wait") = I.norm_wait, py::arg("max_wait") = I.max_wait,
                        py::arg("kv_mean") = I.kv_mean);
      },
      py::arg("scaler"), py::arg("stage"), py::arg("now"), py::arg("views"),
      "The three HFX scaling indicators of one pool (HFX-v2 Sec. 3.3.3).");

  py::class_<PriorityMapper>(m, "PriorityMapper", "HFX Alg. 2 / Eq. 6 priority-to-SLO mapper.")
      .def(py::init([](int window, std::vector<double> ttft_base, std::vector<double> tpot_base, double spread,
                       double relaxed_min, bool queue_correction) {
             MapperParams p;
             p.window = window;
             p.ttft_base = std::move(ttft_base);
             p.tpot_base = std::move(tpot_base);
             p.spread = spread;
             p.relaxed_min = relaxed_min;
             p.queue_correction = queue_correction;
             return PriorityMapper(p);
           }),
           py::kw_only(), py::arg("window") = 200, py::arg("ttft_base") = std::vector<double>{0.7, 1.0, 2.0, 20.0},
           py::arg("tpot_base") = std::vector<double>{0.5, 0.7, 0.9, 1.0}, py::arg("spread") = 0.25,
           py::arg("relaxed_min") = 0.5, py::arg("queue_correction") = true)
      .def("map", &PriorityMapper::map, py::arg("priority"), py::arg("higher_pending"))
      .def("index", &PriorityMapper::index, py::arg("priority"))
      .def("record", &PriorityMapper::record, py::arg("priority"), py::arg("ttft"), py::arg("queue_time"),
           py::arg("tpot"))
      .def(
          "on_dispatch",
          [](PriorityMapper& pm, int priority, double queue_time) {
            check_duration(queue_time, "queue_time");
            pm.on_dispatch(priority, queue_time);
          },
          py::arg("priority"), py::arg("queue_time"))
      .def("counts", &PriorityMapper::counts)
      .def("bounds_ttft", &PriorityMapper::bounds_ttft, py::arg("priority"))
      .def("bounds_tpot", &PriorityMapper::bounds_tpot, py::arg("priority"))
      .def("__len__", &PriorityMapper::size);
}
