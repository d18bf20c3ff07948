#include "slocore/sibyl/policy.h"

#include <cmath>

#include "slocore/core/errors.h"

namespace slocore::sibyl {

ParamMap SibylPolicy::params() const { return write_params(SibylParams{core_.options(), handoff_}); }

void SibylPolicy::submit(const Request& r, Time now, Time expected_handoff) {
  validate(r);
  require_finite(now, "now");
  if (core_.tracks(r.id)) core_.forget(r.id);  // re-placed (its target drained): start over
  Time tau = std::nan("");
  if (handoff_ == Handoff::Queue && std::isfinite(expected_handoff)) tau = std::max(now, expected_handoff);
  queue_.push_back({r, now, tau});
}

std::vector<Assignment> SibylPolicy::poll(Time now, const std::vector<InstanceView>& views) {
  std::vector<Assignment> out;
  ids_.clear();
  const InstanceView* any = nullptr;
  for (const InstanceView& v : views)
    if (v.accepting) ids_.push_back(v.id), any = any ? any : &v;
  if (!any) return out;
  while (!queue_.empty()) {
    Item it = std::move(queue_.front());
    queue_.pop_front();
    Time tau = it.tau;
    if (std::isnan(tau))  // Alg. 1 lines 2-3: tau = now + the request's prefill estimate
      tau = now + any->model.overhead() + any->model.prefill_cost(it.r.prompt_len, 0);
    const int i = core_.argmin(ids_, now, tau);
    const Id inst = ids_[size_t(i)];
    core_.assign(it.r.id, inst, it.r.prompt_len, tau);
    out.push_back({it.r.id, inst});
  }
  return out;
}

void SibylPolicy::on_prefill_done(Id request, Id, Time now) {
  if (core_.tracks(request)) core_.set_handoff(request, now);  // tau_k is now known
}

void SibylPolicy::on_token(Id request, Id, Tokens generated, Time now) {
  if (core_.tracks(request)) core_.token(request, generated, now);
}

void SibylPolicy::on_finished(Id request, Id, Time) {
  if (core_.tracks(request)) core_.finish(request);
}

}  // namespace slocore::sibyl
