// The paper's baselines as early assignment (SIBYL Sec. 2.3, Alg. 2 lines 15-18): RR and ILS
// pick the decode instance at prefill start, from the views at that moment, like SIBYL; the
// load discrepancy of Fig. 1 is what they suffer from.
// Wraps any push policy and forwards everything; only early_assignment() changes.
#pragma once
#include <memory>

#include "slocore/policy/global_policy.h"

namespace slocore::sibyl {

// The inner policy by name and its parameters as `inner.<param>` keys, e.g.
// {"policy": "random", "inner.seed": 3}.
struct EarlyAssignParams {
  std::string policy = "least_outstanding";
  ParamMap inner;
  template <class V>
  void visit(V& v) {
    v.field("policy", policy, "the push policy that decides at prefill start (not sibyl or early_assign)");
    v.nested("inner", inner, "parameters of that policy, as inner.<param> (e.g. inner.seed)");
  }
};

class EarlyAssign : public GlobalPolicy {
 public:
  explicit EarlyAssign(std::shared_ptr<GlobalPolicy> inner) : inner_(std::move(inner)) {}
  std::string name() const override { return "early_assign"; }
  ParamMap params() const override { return write_params(EarlyAssignParams{inner_->name(), inner_->params()}); }
  void submit(const Request& r, Time now, Time expected_handoff) override { inner_->submit(r, now, expected_handoff); }
  std::vector<Assignment> poll(Time now, const std::vector<InstanceView>& views) override {
    return inner_->poll(now, views);
  }
  Time next_wakeup() const override { return inner_->next_wakeup(); }
  bool early_assignment() const override { return true; }
  size_t pending() const override { return inner_->pending(); }
  void on_cancelled(Id r, Time now) override { inner_->on_cancelled(r, now); }
  void on_prefill_done(Id r, Id i, Time now) override { inner_->on_prefill_done(r, i, now); }
  void on_token(Id r, Id i, Tokens g, Time now) override { inner_->on_token(r, i, g, now); }
  void on_finished(Id r, Id i, Time now) override { inner_->on_finished(r, i, now); }
  void on_instance_added(Id i, Role role, Time now) override { inner_->on_instance_added(i, role, now); }
  void on_instance_removed(Id i, Time now) override { inner_->on_instance_removed(i, now); }

 private:
  std::shared_ptr<GlobalPolicy> inner_;
};

}  // namespace slocore::sibyl
