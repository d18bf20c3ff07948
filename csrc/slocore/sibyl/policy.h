// SIBYL decode-instance policy (SIBYL Alg. 1): early assignment at
// prefill start to the decode instance with the least projected load at the handoff time.
// tau is `expected_handoff` from the caller (the prefill instance's queue wait plus the
// prefill: what the prefill instance knows) when handoff = "queue", or now + the request's own prefill estimate
// (Alg. 1 line 2, the paper's version) when handoff = "prefill". Requests submitted after
// their prefill (a target drained meanwhile) are placed with tau = now.
#pragma once
#include <deque>
#include <string>
#include <utility>

#include "slocore/policy/global_policy.h"
#include "slocore/sibyl/projected_load.h"

namespace slocore::sibyl {

// tau: the caller's expected_handoff (queue wait + prefill), or the paper's own prefill estimate.
enum class Handoff { Queue, Prefill };
inline const EnumNames<Handoff> kHandoffs = {{"queue", Handoff::Queue}, {"prefill", Handoff::Prefill}};

struct SibylParams {
  Options load;
  Handoff handoff = Handoff::Queue;
  template <class V>
  void visit(V& v) {
    load.visit(v);
    v.field("handoff", handoff, "tau: the caller's expected handoff (queue), or now + own prefill (Alg. 1 line 2)",
            kHandoffs);
  }
};

class SibylPolicy : public GlobalPolicy {
 public:
  explicit SibylPolicy(const SibylParams& p) : core_(p.load), handoff_(p.handoff) {}

  std::string name() const override { return "sibyl"; }
  ParamMap params() const override;
  void submit(const Request& r, Time now, Time expected_handoff) override;
  std::vector<Assignment> poll(Time now, const std::vector<InstanceView>& views) override;
  Time next_wakeup() const override { return queue_.empty() ? kNever : 0.0; }
  bool early_assignment() const override { return true; }
  size_t pending() const override { return queue_.size(); }

  void on_prefill_done(Id request, Id instance, Time now) override;
  void on_token(Id request, Id instance, Tokens generated, Time now) override;
  void on_cancelled(Id request, Time now) override {
    for (auto it = queue_.begin(); it != queue_.end(); ++it)
      if (it->r.id == request) {
        queue_.erase(it);
        return;
      }
  }
  void on_finished(Id request, Id instance, Time now) override;
  void on_instance_removed(Id instance, Time now) override { core_.drop_instance(instance); }

  const ProjectedLoad& core() const { return core_; }

 private:
  struct Item {
    Request r;
    Time submitted;
    Time tau;  // NaN: estimate from the views' model at poll
  };
  ProjectedLoad core_;
  Handoff handoff_;
  std::deque<Item> queue_;
  std::vector<Id> ids_;  // scratch
};

}  // namespace slocore::sibyl
