// The three policy contracts (the event contract in each header) with pybind11 trampolines, so a Python
// class can implement a policy for research and run inside the C++ simulator.
#include <pybind11/stl.h>

#include "bindings.h"
#include "slocore/batch/batch_scheduler.h"
#include "slocore/policy/global_policy.h"
#include "slocore/policy/recording.h"
#include "slocore/scale/scaler.h"

using namespace slocore;

namespace {

class PyGlobalPolicy : public GlobalPolicy, public py::trampoline_self_life_support {
 public:
  using GlobalPolicy::GlobalPolicy;
  std::string name() const override { PYBIND11_OVERRIDE_PURE(std::string, GlobalPolicy, name); }
  ParamMap params() const override { PYBIND11_OVERRIDE(ParamMap, GlobalPolicy, params); }
  void submit(const Request& r, Time now, Time expected_handoff) override {
    PYBIND11_OVERRIDE_PURE(void, GlobalPolicy, submit, r, now, expected_handoff);
  }
  std::vector<Assignment> poll(Time now, const std::vector<InstanceView>& views) override {
    PYBIND11_OVERRIDE_PURE(std::vector<Assignment>, GlobalPolicy, poll, now, views);
  }
  Time next_wakeup() const override { PYBIND11_OVERRIDE(Time, GlobalPolicy, next_wakeup); }
  bool early_assignment() const override { PYBIND11_OVERRIDE(bool, GlobalPolicy, early_assignment); }
  size_t pending() const override { PYBIND11_OVERRIDE_PURE(size_t, GlobalPolicy, pending); }
  void on_cancelled(Id request, Time now) override {
    PYBIND11_OVERRIDE(void, GlobalPolicy, on_cancelled, request, now);
  }
  void on_prefill_done(Id request, Id instance, Time now) override {
    PYBIND11_OVERRIDE(void, GlobalPolicy, on_prefill_done, request, instance, now);
  }
  void on_token(Id request, Id instance, Tokens generated, Time now) override {
    PYBIND11_OVERRIDE(void, GlobalPolicy, on_token, request, instance, generated, now);
  }
  void on_finished(Id request, Id instance, Time now) override {
    PYBIND11_OVERRIDE(void, GlobalPolicy, on_finished, request, instance, now);
  }
  void on_instance_added(Id instance, Role role, Time now) override {
    PYBIND11_OVERRIDE(void, GlobalPolicy, on_instance_added, instance, role, now);
  }
  void on_instance_removed(Id instance, Time now) override {
    PYBIND11_OVERRIDE(void, GlobalPolicy, on_instance_removed, instance, now);
  }
};

class PyBatchScheduler : public BatchScheduler, public py::trampoline_self_life_support {
 public:
  using BatchScheduler::BatchScheduler;
  std::string name() const override { PYBIND11_OVERRIDE_PURE(std::string, BatchScheduler, name); }
  ParamMap params() const override { PYBIND11_OVERRIDE(ParamMap, BatchScheduler, params); }
  BatchPlan schedule(const InstanceView& engine, Time now) override {
    PYBIND11_OVERRIDE_PURE(BatchPlan, BatchScheduler, schedule, engine, now);
  }
  void on_batch_done(const InstanceView& engine, const BatchPlan& plan, double predicted_s,
                     double actual_s, Time now) override {
    PYBIND11_OVERRIDE(void, BatchScheduler, on_batch_done, engine, plan, predicted_s, actual_s, now);
  }
  void on_finished(Id request, Time now) override {
    PYBIND11_OVERRIDE(void, BatchScheduler, on_finished, request, now);
  }
};

class PyScaler : public Scaler, public py::trampoline_self_life_support {
 public:
  using Scaler::Scaler;
  std::string name() const override { PYBIND11_OVERRIDE_PURE(std::string, Scaler, name); }
  ParamMap params() const override { PYBIND11_OVERRIDE(ParamMap, Scaler, params); }
  Time interval() const override { PYBIND11_OVERRIDE(Time, Scaler, interval); }
  void on_arrival(const Request& r, Time now) override { PYBIND11_OVERRIDE(void, Scaler, on_arrival, r, now); }
  void on_first_token(Id request, Time now) override {
    PYBIND11_OVERRIDE(void, Scaler, on_first_token, request, now);
  }
  void on_finished(Id request, Time now) override { PYBIND11_OVERRIDE(void, Scaler, on_finished, request, now); }
  std::vector<ScaleDecision> decide(Time now, const std::vector<InstanceView>& views) override {
    PYBIND11_OVERRIDE_PURE(std::vector<ScaleDecision>, Scaler, decide, now, views);
  }
};

}  // namespace

void init_interfaces(py::module_& m) {
  py::class_<Assignment>(m, "Assignment")
      .def(py::init([](Id request, Id instance) { return Assignment{request, instance}; }), py::arg("request"),
           py::arg("instance"))
      .def_readwrite("request", &Assignment::request)
      .def_readwrite("instance", &Assignment::instance)
      .def("__repr__", [](const Assignment& a) {
        return "Assignment(request=" + std::to_string(a.request) + ", instance=" + std::to_string(a.instance) + ")";
      });

  py::class_<GlobalPolicy, PyGlobalPolicy, py::smart_holder>(m, "GlobalPolicy")
      .def(py::init<>())
      .def("name", &GlobalPolicy::name)
      .def("params", &GlobalPolicy::params)
      .def(
          "submit",
          [](GlobalPolicy& p, const Request& r, Time now, Time expected_handoff) {
            validate(r);
            p.submit(r, now, expected_handoff);
          },
          py::arg("request"), py::arg("now"), py::arg("expected_handoff") = std::nan(""))
      .def("poll", &GlobalPolicy::poll, py::arg("now"), py::arg("views"))
      .def("next_wakeup", &GlobalPolicy::next_wakeup)
      .def("early_assignment", &GlobalPolicy::early_assignment)
      .def("pending", &GlobalPolicy::pending)
      .def("on_cancelled", &GlobalPolicy::on_cancelled, py::arg("request"), py::arg("now"))
      .def("on_prefill_done", &GlobalPolicy::on_prefill_done, py::arg("request"), py::arg("instance"), py::arg("now"))
      .def("on_token", &GlobalPolicy::on_token, py::arg("request"), py::arg("instance"), py::arg("generated"),
           py::arg("now"))
      .def("on_finished", &GlobalPolicy::on_finished, py::arg("request"), py::arg("instance"), py::arg("now"))
      .def("on_instance_added", &GlobalPolicy::on_instance_added, py::arg("instance"), py::arg("role"), py::arg("now"))
      .def("on_instance_removed", &GlobalPolicy::on_instance_removed, py::arg("instance"), py::arg("now"));

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

  m.def("expected_handoff", &expected_handoff, py::arg("view"), py::arg("request"), py::arg("now"),
        "The predicted end of the request's prefill on the instance with this view (early assignment).");

  py::class_<ScheduledItem>(m, "ScheduledItem")
      .def(py::init([](Id request, Tokens tokens) { return ScheduledItem{request, tokens}; }), py::arg("request"),
           py::arg("tokens") = 1)
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
      .def("schedule", &BatchScheduler::schedule, py::arg("engine"), py::arg("now"))
      .def("on_batch_done", &BatchScheduler::on_batch_done, py::arg("engine"), py::arg("plan"),
           py::arg("predicted_s"), py::arg("actual_s"), py::arg("now"))
      .def("on_finished", &BatchScheduler::on_finished, py::arg("request"), py::arg("now"));

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
      .def("on_arrival", &Scaler::on_arrival, py::arg("request"), py::arg("now"))
      .def("on_first_token", &Scaler::on_first_token, py::arg("request"), py::arg("now"))
      .def("on_finished", &Scaler::on_finished, py::arg("request"), py::arg("now"))
      .def("decide", &Scaler::decide, py::arg("now"), py::arg("views"));
}
