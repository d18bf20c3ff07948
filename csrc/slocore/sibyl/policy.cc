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
  std::vector<const InstanceView*> cand;
  bool same_model = true;  // identical instances: one estimate serves all (the paper's setting)
  for (const InstanceView& v : views)
    if (v.accepting) {
      ids_.push_back(v.id), cand.push_back(&v);
      const LatencyCoeffs &a = cand.front()->model.coeffs(), &b = v.model.coeffs();
      same_model = same_model && a.t_c == b.t_c && a.a_p == b.a_p && a.b_p == b.b_p && a.c_p == b.c_p;
    }
  if (cand.empty()) return out;
  std::vector<double> taus(cand.size());
  while (!queue_.empty()) {
    Item it = std::move(queue_.front());
    queue_.pop_front();
    Time tau = it.tau;
    int i;
    if (!std::isnan(tau)) {
      i = core_.argmin(ids_, now, tau);
    } else if (same_model && it.r.prefix.empty()) {  // Alg. 1 lines 2-3: tau = now + prefill estimate
      const LatencyModel& m = cand.front()->model;
      tau = now + m.overhead() + m.prefill_cost(it.r.prompt_len, 0);
      i = core_.argmin(ids_, now, tau);
    } else {  // mixed instances or a cached prefix: each candidate's own estimate of its prefill
      i = -1;
      double best = kNever;
      PromptChains chains(it.r);
      for (size_t k = 0; k < cand.size(); ++k) {
        const InstanceView& v = *cand[k];
        const Tokens hit = it.r.prefix.empty() ? 0 : v.cached_prefix_tokens(chains.get(v.block_size));
        taus[k] = now + v.model.overhead() + v.model.prefill_cost(it.r.prompt_len - hit, hit);
        const double l = core_.load(ids_[k], now, taus[k]);
        if (l < best || i < 0) best = l, i = int(k);
      }
      tau = taus[size_t(i)];
    }
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
