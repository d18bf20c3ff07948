// The three policy contracts (the event contract in each header) with pybind11 trampolines, so a Python
// class can implement a policy for research and run inside the C++ simulator.
#include <pybind11/stl.h>

#include <cmath>

#include "bindings.h"
#include "slocore/batch/batch_scheduler.h"
#include "slocore/core/input_checks.h"
#include "slocore/policy/checked_calls.h"
#include "slocore/policy/global_policy.h"
#include "slocore/policy/recording.h"
#include "slocore/scale/scaler.h"

using namespace slocore;

namespace {

// Overrides that turn a Python method returning the wrong type, or a missing abstract
// method, into TypeError naming it (pybind11's own would be a RuntimeError).
#define SLOCORE_OVERRIDE_IMPL(ret, cname, fn, ...)                                                                  \
  try {                                                                                                             \
    PYBIND11_OVERRIDE_IMPL(PYBIND11_TYPE(ret), PYBIND11_TYPE(cname), #fn, __VA_ARGS__);                             \
  } catch (const py::cast_error& e) {                                                                               \
    throw py::type_error(std::string(#cname "." #fn ": the Python override returned the wrong type: ") + e.what()); \
  }
#define SLOCORE_OVERRIDE_PURE(ret, cname, fn, ...)                                           \
  do {                                                                                       \
    SLOCORE_OVERRIDE_IMPL(ret, cname, fn, __VA_ARGS__)                                       \
    throw py::type_error(#cname "." #fn " is abstract: the Python subclass must define it"); \
  } while (false)
#define SLOCORE_OVERRIDE(ret, cname, fn, ...)          \
  do {                                                 \
    SLOCORE_OVERRIDE_IMPL(ret, cname, fn, __VA_ARGS__) \
    return cname::fn(__VA_ARGS__);                     \
  } while (false)

class PyGlobalPolicy : public GlobalPolicy, public py::trampoline_self_life_support {
 public:
  using GlobalPolicy::GlobalPolicy;
  std::string name() const override { SLOCORE_OVERRIDE_PURE(std::string, GlobalPolicy, name); }
  ParamMap params() const override { SLOCORE_OVERRIDE(ParamMap, GlobalPolicy, params); }
  void submit(const Request& r, Time now, Time expected_handoff) override {
    SLOCORE_OVERRIDE_PURE(void, GlobalPolicy, submit, r, now, expected_handoff);
  }
  std::vector<Assignment> poll(Time now, const std::vector<InstanceView>& views) override {
    SLOCORE_OVERRIDE_PURE(std::vector<Assignment>, GlobalPolicy, poll, now, views);
  }
  Time next_wakeup() const override { SLOCORE_OVERRIDE(Time, GlobalPolicy, next_wakeup); }
  bool early_assignment() const override { SLOCORE_OVERRIDE(bool, GlobalPolicy, early_assignment); }
  size_t pending() const override { SLOCORE_OVERRIDE_PURE(size_t, GlobalPolicy, pending); }
  void on_cancelled(Id request, Time now) override { SLOCORE_OVERRIDE(void, GlobalPolicy, on_cancelled, request, now); }
  void on_prefill_done(Id request, Id instance, Time now) override {
    SLOCORE_OVERRIDE(void, GlobalPolicy, on_prefill_done, request, instance, now);
  }
  void on_token(Id request, Id instance, Tokens generated, Time now) override {
    SLOCORE_OVERRIDE(void, GlobalPolicy, on_token, request, instance, generated, now);
  }
  void on_finished(Id request, Id instance, Time now) override {
    SLOCORE_OVERRIDE(void, GlobalPolicy, on_finished, request, instance, now);
  }
  void on_instance_added(Id instance, Role role, Time now) override {
    SLOCORE_OVERRIDE(void, GlobalPolicy, on_instance_added, instance, role, now);
  }
  void on_instance_removed(Id instance, Time now) override {
    SLOCORE_OVERRIDE(void, GlobalPolicy, on_instance_removed, instance, now);
  }
};

class PyBatchScheduler : public BatchScheduler, public py::trampoline_self_life_support {
 public:
  using BatchScheduler::BatchScheduler;
  std::string name() const override { SLOCORE_OVERRIDE_PURE(std::string, BatchScheduler, name); }
  ParamMap params() const override { SLOCORE_OVERRIDE(ParamMap, BatchScheduler, params); }
  BatchPlan schedule(const InstanceView& engine, Time now) override {
    SLOCORE_OVERRIDE_PURE(BatchPlan, BatchScheduler, schedule, engine, now);
  }
  void on_batch_done(const InstanceView& engine, const BatchPlan& plan, double predicted_s, double actual_s,
                     Time now) override {
    SLOCORE_OVERRIDE(void, BatchScheduler, on_batch_done, engine, plan, predicted_s, actual_s, now);
  }
  void on_finished(Id request, Time now) override { SLOCORE_OVERRIDE(void, BatchScheduler, on_finished, request, now); }
};

class PyScaler : public Scaler, public py::trampoline_self_life_support {
 public:
  using Scaler::Scaler;
  std::string name() const override { SLOCORE_OVERRIDE_PURE(std::string, Scaler, name); }
  ParamMap params() const override { SLOCORE_OVERRIDE(ParamMap, Scaler, params); }
  Time interval() const override {
    const Time t = [&]() -> Time { SLOCORE_OVERRIDE(Time, Scaler, interval, ); }();
    require(std::isfinite(t) && t >= kMinIntervalS, "interval",
            "a scaler's interval() must be finite and >= " + std::to_string(kMinIntervalS) + " s");
    return t;
  }
  void on_arrival(const Request& r, Time now) override { SLOCORE_OVERRIDE(void, Scaler, on_arrival, r, now); }
  void on_first_token(Id request, Time now) override { SLOCORE_OVERRIDE(void, Scaler, on_first_token, request, now); }
  void on_finished(Id request, Time now) override { SLOCORE_OVERRIDE(void, Scaler, on_finished, request, now); }
  std::vector<ScaleDecision> decide(Time now, const std::vector<InstanceView>& views) override {
    SLOCORE_OVERRIDE_PURE(std::vector<ScaleDecision>, Scaler, decide, now, views);
  }
};

// True for a C++ policy or scaler; false for a Python subclass (its ledger stays off).
bool native(GlobalPolicy& p) { return dynamic_cast<PyGlobalPolicy*>(&p) == nullptr; }
bool native(Scaler& s) { return dynamic_cast<PyScaler*>(&s) == nullptr; }

}  // namespace

void init_interfaces(py::module_& m) {
  py::class_<Assignment>(m, "Assignment")
      .def(py::init([](Id request, Id instance) {
             return Assignment{request, instance};
           }),
           py::arg("request"), py::arg("instance"))
      .def_readwrite("request", &Assignment::request)
      .def_readwrite("instance", &Assignment::instance)
      .def("__repr__", [](const Assignment& a) {
        return "Assignment(request=" + std::to_string(a.request) + ", instance=" + std::to_string(a.instance) + ")";
      });

  // Python callers go through slocore::checked (policy/checked_calls.h). A Python subclass's
  // overrides are called by Python directly, so its id ledger stays off (`ledger(p)`).
  py::class_<GlobalPolicy, PyGlobalPolicy, py::smart_holder>(m, "GlobalPolicy")
      .def(py::init<>())
      .def("name", &GlobalPolicy::name)
      .def("params", &GlobalPolicy::params)
      .def(
          "submit",
          [](GlobalPolicy& p, const Request& r, Time now, Time expected_handoff) {
            checked::submit(p, r, now, expected_handoff, native(p));
          },
          py::arg("request"), py::arg("now"), py::arg("expected_handoff") = std::nan(""))
      .def(
          "poll",
          [](GlobalPolicy& p, Time now, const std::vector<InstanceView>& views) {
            return checked::poll(p, now, views, native(p));
          },
          py::arg("now"), py::arg("views"))
      .def("next_wakeup", &GlobalPolicy::next_wakeup)
      .def("early_assignment", &GlobalPolicy::early_assignment)
      .def("pending", &GlobalPolicy::pending)
      .def(
          "on_cancelled",
          [](GlobalPolicy& p, Id request, Time now) { checked::on_cancelled(p, request, now, native(p)); },
          py::arg("request"), py::arg("now"))
      .def(
          "on_prefill_done",
          [](GlobalPolicy& p, Id request, Id instance, Time now) {
            checked::on_prefill_done(p, request, instance, now, native(p));
          },
          py::arg("request"), py::arg("instance"), py::arg("now"))
      .def(
          "on_token",
          [](GlobalPolicy& p, Id request, Id instance, Tokens generated, Time now) {
            checked::on_token(p, request, instance, generated, now, native(p));
          },
          py::arg("request"), py::arg("instance"), py::arg("generated"), py::arg("now"))
      .def(
          "on_finished",
          [](GlobalPolicy& p, Id request, Id instance, Time now) {
            checked::on_finished(p, request, instance, now, native(p));
          },
          py::arg("request"), py::arg("instance"), py::arg("now"))
      .def(
          "on_instance_added",
          [](GlobalPolicy& p, Id instance, Role role, Time now) {
            checked::on_instance_added(p, instance, role, now, native(p));
          },
          py::arg("instance"), py::arg("role"), py::arg("now"))
      .def(
          "on_instance_removed",
          [](GlobalPolicy& p, Id instance, Time now) { checked::on_instance_removed(p, instance, now, native(p)); },
          py::arg("instance"), py::arg("now"));

  py::class_<RecordingPolicy, GlobalPolicy, py::smart_holder>(m, "RecordingPolicy")
      .def(
          "events",
          [](const RecordingPolicy& p) {
            py::list out;
            for (const PolicyEvent& e : p.events())
              out.append(py::make_tuple(e.kind, e.request, e.instance, e.generated, e.now, e.expected_handoff));
            return out;
          },
          "Every call received: (kind, request, instance, generated, now, expected_handoff) tuples.")
      .def("clear", &RecordingPolicy::clear);

  m.def("expected_handoff", py::overload_cast<const InstanceView&, const Request&, Time>(&expected_handoff),
        py::arg("view"), py::arg("request"), py::arg("now"),
        "The predicted end of the request's prefill on the instance with this view (early assignment).");

  py::class_<ScheduledItem>(m, "ScheduledItem")
      .def(py::init([](Id request, Tokens tokens) {
             return ScheduledItem{request, tokens};
           }),
           py::arg("request"), py::arg("tokens") = 1)
      .def_readwrite("request", &ScheduledItem::request)
      .def_readwrite("tokens", &ScheduledItem::tokens);

  py::class_<BatchPlan>(m, "BatchPlan")
      .def(py::init([](std::vector<ScheduledItem> items, std::vector<Id> preempt) {
             return BatchPlan{std::move(items), std::move(preempt)};
           }),
           py::arg("items") = std::vector<ScheduledItem>{}, py::arg("preempt") = std::vector<Id>{})
      .def_readwrite("items", &BatchPlan::items)
      .def_readwrite("preempt", &BatchPlan::preempt);

  py::class_<BatchScheduler, PyBatchScheduler, py::smart_holder>(m, "BatchScheduler")
      .def(py::init<>())
      .def("name", &BatchScheduler::name)
      .def("params", &BatchScheduler::params)
      .def(
          "schedule", [](BatchScheduler& s, const InstanceView& v, Time now) { return checked::schedule(s, v, now); },
          py::arg("engine"), py::arg("now"))
      .def(
          "on_batch_done",
          [](BatchScheduler& s, const InstanceView& v, const BatchPlan& plan, double predicted_s, double actual_s,
             Time now) { checked::on_batch_done(s, v, plan, predicted_s, actual_s, now); },
          py::arg("engine"), py::arg("plan"), py::arg("predicted_s"), py::arg("actual_s"), py::arg("now"))
      .def(
          "on_finished", [](BatchScheduler& s, Id request, Time now) { checked::on_finished(s, request, now); },
          py::arg("request"), py::arg("now"));

  py::enum_<ScaleAction>(m, "ScaleAction")
      .value("SCALE_OUT", ScaleAction::ScaleOut)
      .value("SCALE_IN", ScaleAction::ScaleIn)
      .value("SWITCH_ROLE", ScaleAction::SwitchRole);

  py::class_<ScaleDecision>(m, "ScaleDecision")
      .def(py::init([](ScaleAction action, Role role, Id instance, std::string profile) {
             return ScaleDecision{action, role, instance, std::move(profile)};
           }),
           py::arg("action"), py::arg_v("role", Role::Colocated, "Role.COLOCATED"), py::arg("instance") = kNoInstance,
           py::arg("profile") = "")
      .def_readwrite("action", &ScaleDecision::action)
      .def_readwrite("role", &ScaleDecision::role)
      .def_readwrite("instance", &ScaleDecision::instance)
      .def_readwrite("profile", &ScaleDecision::profile);

  py::class_<Scaler, PyScaler, py::smart_holder>(m, "Scaler")
      .def(py::init<>())
      .def("name", &Scaler::name)
      .def("params", &Scaler::params)
      .def("interval", &Scaler::interval)
      .def(
          "on_arrival", [](Scaler& s, const Request& r, Time now) { checked::on_arrival(s, r, now, native(s)); },
          py::arg("request"), py::arg("now"))
      .def(
          "on_first_token",
          [](Scaler& s, Id request, Time now) { checked::on_first_token(s, request, now, native(s)); },
          py::arg("request"), py::arg("now"))
      .def(
          "on_finished", [](Scaler& s, Id request, Time now) { checked::on_finished(s, request, now, native(s)); },
          py::arg("request"), py::arg("now"))
      .def(
          "decide",
          [](Scaler& s, Time now, const std::vector<InstanceView>& views) { return checked::decide(s, now, views); },
          py::arg("now"), py::arg("views"));
}
