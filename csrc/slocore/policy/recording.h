// A policy that records every call it receives (the event contract of global_policy.h)
// and forwards it to an inner policy: the conformance test runs it in the simulator and
// behind `slocore serve` and compares the two logs. Also "assign" for each Assignment
// the inner policy's poll() returned.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "slocore/policy/global_policy.h"

namespace slocore {

struct PolicyEvent {
  std::string kind;  // submit, assign, cancelled, prefill_done, token, finished, instance_added, instance_removed
  Id request = -1;
  Id instance = kNoInstance;
  Tokens generated = 0;
  Time now = 0.0;
  Time expected_handoff = std::nan("");  // submit only
};

struct RecordingParams {
  std::string policy = "least_outstanding";
  ParamMap inner;
  template <class V>
  void visit(V& v) {
    v.field("policy", policy, "the policy whose calls are recorded (not recording)");
    v.nested("inner", inner, "parameters of that policy, as inner.<param>");
  }
};

class RecordingPolicy : public GlobalPolicy {
 public:
  explicit RecordingPolicy(std::shared_ptr<GlobalPolicy> inner) : inner_(std::move(inner)) {}
  std::string name() const override { return "recording"; }
  ParamMap params() const override { return write_params(RecordingParams{inner_->name(), inner_->params()}); }
  void submit(const Request& r, Time now, Time expected_handoff) override {
    log_.push_back({"submit", r.id, kNoInstance, 0, now, expected_handoff});
    inner_->submit(r, now, expected_handoff);
  }
  std::vector<Assignment> poll(Time now, const std::vector<InstanceView>& views) override {
    std::vector<Assignment> out = inner_->poll(now, views);
    for (const Assignment& a : out) log_.push_back({"assign", a.request, a.instance, 0, now});
    return out;
  }
  Time next_wakeup() const override { return inner_->next_wakeup(); }
  bool early_assignment() const override { return inner_->early_assignment(); }
  size_t pending() const override { return inner_->pending(); }
  void on_cancelled(Id r, Time now) override {
    log_.push_back({"cancelled", r, kNoInstance, 0, now});
    inner_->on_cancelled(r, now);
  }
  void on_prefill_done(Id r, Id i, Time now) override {
    log_.push_back({"prefill_done", r, i, 0, now});
    inner_->on_prefill_done(r, i, now);
  }
  void on_token(Id r, Id i, Tokens g, Time now) override {
    log_.push_back({"token", r, i, g, now});
    inner_->on_token(r, i, g, now);
  }
  void on_finished(Id r, Id i, Time now) override {
    log_.push_back({"finished", r, i, 0, now});
    inner_->on_finished(r, i, now);
  }
  void on_instance_added(Id i, Role role, Time now) override {
    log_.push_back({"instance_added", -1, i, 0, now});
    inner_->on_instance_added(i, role, now);
  }
  void on_instance_removed(Id i, Time now) override {
    log_.push_back({"instance_removed", -1, i, 0, now});
    inner_->on_instance_removed(i, now);
  }

  const std::vector<PolicyEvent>& events() const { return log_; }
  void clear() { log_.clear(); }

 private:
  std::shared_ptr<GlobalPolicy> inner_;
  std::vector<PolicyEvent> log_;
};

}  // namespace slocore
