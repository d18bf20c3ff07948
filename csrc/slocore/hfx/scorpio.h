// SCORPIO-style baseline as HFX evaluates it (HFX Sec. 7.4: "SCORPIO
// [40] ... we added Round Robin logic to it to support multi-instance scheduling").
// SCORPIO's two guards, reduced to what a router can do:
//  * TTFT guard: least-deadline-first queue (deadline = arrival + TTFT) and rejection of
//    requests whose TTFT is unattainable on their round-robin instance. The simulator cannot
//    drop a request, so a rejected one is served last, by an instance with no prefill
//    queued (it counts as an SLO miss either way).
//  * TPOT guard (virtual batch size): an instance takes a request only while its predicted
//    decode step (Eq. 2) with one more request stays within the tightest TPOT it serves.
#pragma once
#include <set>
#include <unordered_map>

#include "slocore/policy/global_policy.h"

namespace slocore::hfx {

class ScorpioPolicy : public GlobalPolicy {
 public:
  std::string name() const override { return "scorpio"; }
  void submit(const Request& r, Time now, Time expected_handoff) override;
  std::vector<Assignment> poll(Time now, const std::vector<InstanceView>& views) override;
  Time next_wakeup() const override { return queue_.empty() && rejected_.empty() ? kNever : now_ + 0.01; }
  size_t pending() const override { return queue_.size() + rejected_.size(); }
  void on_cancelled(Id request, Time now) override {
    auto r = reqs_.find(request);
    if (r == reqs_.end()) return;
    queue_.erase({r->second.arrival + r->second.slo.ttft, request});
    rejected_.erase({r->second.arrival, request});
    reqs_.erase(r);
  }

 private:
  std::set<std::pair<Time, Id>> queue_;     // (TTFT deadline, id)
  std::set<std::pair<Time, Id>> rejected_;  // (arrival, id): unattainable TTFT, served last
  std::unordered_map<Id, Request> reqs_;
  Id last_ = -1;
  Time now_ = 0.0;
};

}  // namespace slocore::hfx
