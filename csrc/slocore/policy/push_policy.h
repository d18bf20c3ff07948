// Base for push policies (docs/design.md "Contracts"): each submitted request is placed by
// choose() at the next poll, in arrival order. Requests placed in the same poll are
// counted against their instance (`placed_`) so one poll does not pile onto one instance
// before the views catch up.
#pragma once
#include <deque>
#include <unordered_map>

#include "slocore/policy/global_policy.h"

namespace slocore {

class PushPolicy : public GlobalPolicy {
 public:
  void submit(const Request& r, Time now, Time expected_handoff) override;
  std::vector<Assignment> poll(Time now, const std::vector<InstanceView>& views) override;
  Time next_wakeup() const override { return queue_.empty() ? kNever : 0.0; }
  size_t pending() const override { return queue_.size(); }
  void on_cancelled(Id request, Time now) override;

 protected:
  // Index into `views` of the instance for r, or -1 to keep r queued (no instance accepts).
  virtual int choose(const Request& r, Time now, const std::vector<InstanceView>& views) = 0;
  // Requests and tokens this poll has already placed on instance `id`.
  int64_t placed_requests(Id id) const;
  int64_t placed_tokens(Id id) const;

 private:
  std::deque<Request> queue_;
  std::unordered_map<Id, std::pair<int64_t, int64_t>> placed_;
};

}  // namespace slocore
