#include "slocore/sibyl/projected_load.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "slocore/core/errors.h"

namespace slocore::sibyl {

void Options::validate() const {
  check_params(*this, "sibyl");
  require(max_len >= bucket, "sibyl.max_len", "must be >= bucket");
  require(type1 || type2 || type3, "sibyl.type1/type2/type3", "at least one load type must stay on");
}

ProjectedLoad::ProjectedLoad(const Options& o) : opt_(o), est_(o.bucket, o.alpha, o.max_len) { opt_.validate(); }

const ProjectedLoad::Where& ProjectedLoad::where(Id request) const {
  const Where* w = where_.find(request);
  if (!w) throw UnknownId("request: sibyl does not track id " + std::to_string(request));
  return *w;
}

Tracked& ProjectedLoad::get(Id request) {
  const Where& w = where(request);
  return w.in->full[w.slot];
}

std::pair<ProjectedLoad::Instance*, size_t> ProjectedLoad::slot_of(Id request) {
  const Where& w = where(request);
  return {w.in, w.slot};
}

Id ProjectedLoad::instance_of(Id request) const { return where(request).instance; }

void ProjectedLoad::assign(Id request, Id instance, Tokens prompt_len, Time tau) {
  require(prompt_len >= 0, "prompt_len", "must be >= 0");
  require_finite(tau, "tau");
  if (tracks(request)) fail("request", "id " + std::to_string(request) + " already tracked");
  Instance& v = by_instance_[instance];
  Tracked k;
  k.id = request;
  k.prompt_len = prompt_len;
  k.tau = tau;
  where_.emplace(request, {instance, &v, v.full.size()});
  v.full.push_back(k);
  v.lite.push_back({tau, double(prompt_len)});
  v.rate.push_back(-1.0);
}

void ProjectedLoad::set_handoff(Id request, Time tau) {
  require_finite(tau, "tau");
  auto [in, slot] = slot_of(request);
  Tracked& k = in->full[slot];
  if (k.active) return;
  k.tau = tau;
  in->lite[slot].x = tau;
}

void ProjectedLoad::token(Id request, Tokens generated, Time now) {
  require_finite(now, "now");
  require(generated >= 0, "generated", "must be >= 0");
  auto [in, slot] = slot_of(request);
  Tracked& k = in->full[slot];
  Lite& l = in->lite[slot];
  if (!k.active) {  // first decode token: Type 2/3 -> Type 1
    k.active = true;
    k.g0 = k.generated = generated;
    k.t0 = k.t_last = now;
    l.lin = -l.lin - 1.0;
  } else {
    if (now > k.t_last) time_sum_ += now - k.t_last, k.t_last = now;
    if (generated > k.generated) tok_sum_ += double(generated - k.generated), k.generated = generated;
  }
  l.x = double(k.generated);  // what a decision reads: l(now) and v_k as rate() computes it
  const double dt = k.t_last - k.t0;
  in->rate[slot] = (dt > 1e-9 && k.generated > k.g0) ? double(k.generated - k.g0) / dt : -1.0;
}

void ProjectedLoad::unobserve(const Tracked& k) {
  if (!k.active) return;
  tok_sum_ -= double(k.generated - k.g0);
  time_sum_ -= k.t_last - k.t0;
}

void ProjectedLoad::forget(Id request) {
  const Where w = where(request);
  Instance& in = *w.in;
  auto& v = in.full;
  const size_t slot = w.slot;
  unobserve(v[slot]);
  if (slot + 1 != v.size()) {  // swap-remove, fix the moved entry's slot
    v[slot] = v.back();
    in.lite[slot] = in.lite.back();
    in.rate[slot] = in.rate.back();
    where_.at(v[slot].id).slot = slot;
  }
  v.pop_back();
  in.lite.pop_back();
  in.rate.pop_back();
  where_.erase(request);
}

Tokens ProjectedLoad::finish(Id request) {
  const Tracked& k = get(request);
  const Tokens len = std::max<Tokens>(k.generated, 1);
  forget(request);
  est_.observe(len);
  return len;
}

void ProjectedLoad::drop_instance(Id instance) {
  auto it = by_instance_.find(instance);
  if (it == by_instance_.end()) return;
  std::vector<Id> ids;
  for (const Tracked& k : it->second.full) ids.push_back(k.id);
  for (Id id : ids) forget(id);
  by_instance_.erase(instance);
}

double ProjectedLoad::v_sys() const { return time_sum_ > 1e-9 ? tok_sum_ / time_sum_ : opt_.v_sys_init; }

double ProjectedLoad::rate(const Tracked& k) const {
  const double dt = k.t_last - k.t0;
  return (k.active && dt > 1e-9 && k.generated > k.g0) ? double(k.generated - k.g0) / dt : v_sys();
}

// Eq. 1 over one instance's slots, in slot order, each sum in its own accumulator: the same
// doubles added in the same order as the plain form (the reference's), so the result is
// bit-identical; the options are template arguments, the survival lookups read a table
// hoisted out of the loop, and the pending form has no branch on the value (a decision
// reads every tracked request, so this loop is SIBYL's hot path).
// Every term is >= 0 and rounding is monotone, so a partial total never exceeds the final
// one: once it reaches `stop_at` (checked every kStopBlock slots; NaN: never) the rest is not
// read and the partial sums come back, a load that is not below `stop_at` either (argmin's).
template <bool kProb, bool kReqlevel>
LoadTerms ProjectedLoad::sum_terms(const Instance& in, Time now, Time tau, double stop_at) const {
  constexpr size_t kStopBlock = 256;
  const double vs = v_sys();
  const bool type1 = opt_.type1, type2 = opt_.type2, type3 = opt_.type3;
  const double ahead = std::max(0.0, tau - now);
  const SurvivalEstimator::Table S = est_.table();
  double s1 = 0.0, s2 = 0.0, s3 = 0.0;
  const size_t n = in.lite.size();
  const Lite* k = in.lite.data();
  const double* rate = in.rate.data();
  for (size_t i = 0, block_end = std::min(n, kStopBlock); i < n; ++i) {
    if (i == block_end) {
      if ((s1 + s2) + s3 >= stop_at) break;  // LoadTerms::total()'s order
      block_end = std::min(n, block_end + kStopBlock);
    }
    const double x = k[i].x, code = k[i].lin;
    if (code < 0) [[unlikely]] {  // active: Type 1, Eq. 6
      if (!type1) continue;
      const double lin = -code - 1.0;
      const double l_now = x;  // Alg. 1 line 7
      const double v = rate[i] < 0 ? vs : rate[i];
      const double l_tau = l_now + v * ahead;
      const double m = kReqlevel ? 1.0 : lin + l_tau;                                // Alg. 1 line 8
      s1 += m * (kProb ? std::min(1.0, S(l_tau) / std::max(S(l_now), 1e-9)) : 1.0);  // Eq. 6, Eq. 3
      continue;
    }
    // Pending: one form computed and added (+0.0 would leave a sum >= +0 unchanged, so the
    // other sum is skipped). Eq. 8's l_in - v_sys (tau_k - tau) is exactly l_in + g
    // (negation is exact), so the penalty is max(0, l_in + g).
    const double g = vs * (tau - x);                                                 // Alg. 1 line 12
    const double lg = code + g;                                                      // l_in + g
    if (x <= tau) {                                                                  // Type 2, Eq. 7
      if (type2) s2 += kReqlevel ? (kProb ? S(g) : 1.0) : (kProb ? lg * S(g) : lg);  // Alg. 1 line 14
    } else if (type3) {                                                              // Type 3, Eq. 8
      const double pen = std::max(0.0, lg);
      s3 += kReqlevel ? (pen > 0 ? 1.0 : 0.0) : pen;
    }
  }
  LoadTerms t;
  t.type1 = s1, t.type2 = s2, t.type3 = s3;
  return t;
}

LoadTerms ProjectedLoad::terms_until(Id instance, Time now, Time tau, double stop_at) const {
  auto it = by_instance_.find(instance);
  if (it == by_instance_.end()) return {};
  est_.prepare();
  const Instance& in = it->second;
  if (opt_.prob)
    return opt_.reqlevel ? sum_terms<true, true>(in, now, tau, stop_at) : sum_terms<true, false>(in, now, tau, stop_at);
  return opt_.reqlevel ? sum_terms<false, true>(in, now, tau, stop_at) : sum_terms<false, false>(in, now, tau, stop_at);
}

LoadTerms ProjectedLoad::terms(Id instance, Time now, Time tau) const {
  return terms_until(instance, now, tau, std::numeric_limits<double>::quiet_NaN());
}

// The loads in order, each summed only until it reaches the least so far (sum_terms): a load
// cut there is not below it, so the choice is the one full sums give.
int ProjectedLoad::argmin(const std::vector<Id>& instances, Time now, Time tau, std::vector<double>* loads) const {
  int best = -1;
  double best_l = std::numeric_limits<double>::infinity();
  if (loads) loads->assign(instances.size(), 0.0);
  for (size_t i = 0; i < instances.size(); ++i) {
    const double stop_at = loads ? std::numeric_limits<double>::quiet_NaN() : best_l;
    const double l = terms_until(instances[i], now, tau, stop_at).total();
    if (loads) (*loads)[i] = l;
    if (l < best_l) best = int(i), best_l = l;  // Alg. 1 line 20
  }
  return best;
}

}  // namespace slocore::sibyl
