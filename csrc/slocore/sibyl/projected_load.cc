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

Tracked& ProjectedLoad::get(Id request) {
  auto it = where_.find(request);
  if (it == where_.end()) throw UnknownId("request: sibyl does not track id " + std::to_string(request));
  return by_instance_.at(it->second.first).full[it->second.second];
}

ProjectedLoad::Lite& ProjectedLoad::lite(Id request) {
  auto it = where_.find(request);
  return by_instance_.at(it->second.first).lite[it->second.second];
}

Id ProjectedLoad::instance_of(Id request) const {
  auto it = where_.find(request);
  if (it == where_.end()) throw UnknownId("request: sibyl does not track id " + std::to_string(request));
  return it->second.first;
}

void ProjectedLoad::assign(Id request, Id instance, Tokens prompt_len, Time tau) {
  require(prompt_len >= 0, "prompt_len", "must be >= 0");
  require_finite(tau, "tau");
  if (tracks(request)) fail("request", "id " + std::to_string(request) + " already tracked");
  Instance& v = by_instance_[instance];
  Tracked k;
  k.id = request;
  k.prompt_len = prompt_len;
  k.tau = tau;
  where_[request] = {instance, v.full.size()};
  v.full.push_back(k);
  v.lite.push_back({tau, uint64_t(prompt_len), 0});
}

void ProjectedLoad::set_handoff(Id request, Time tau) {
  require_finite(tau, "tau");
  Tracked& k = get(request);
  if (!k.active) k.tau = tau, lite(request).tau = tau;
}

void ProjectedLoad::token(Id request, Tokens generated, Time now) {
  require_finite(now, "now");
  require(generated >= 0, "generated", "must be >= 0");
  Tracked& k = get(request);
  if (!k.active) {  // first decode token: Type 2/3 -> Type 1
    k.active = true;
    lite(request).active = 1;
    k.g0 = k.generated = generated;
    k.t0 = k.t_last = now;
    return;
  }
  if (now > k.t_last) time_sum_ += now - k.t_last, k.t_last = now;
  if (generated > k.generated) tok_sum_ += double(generated - k.generated), k.generated = generated;
}

void ProjectedLoad::unobserve(const Tracked& k) {
  if (!k.active) return;
  tok_sum_ -= double(k.generated - k.g0);
  time_sum_ -= k.t_last - k.t0;
}

void ProjectedLoad::forget(Id request) {
  auto it = where_.find(request);
  if (it == where_.end()) throw UnknownId("request: sibyl does not track id " + std::to_string(request));
  Instance& in = by_instance_.at(it->second.first);
  auto& v = in.full;
  const size_t slot = it->second.second;
  unobserve(v[slot]);
  if (slot + 1 != v.size()) {  // swap-remove, fix the moved entry's slot
    v[slot] = v.back();
    in.lite[slot] = in.lite.back();
    where_[v[slot].id].second = slot;
  }
  v.pop_back();
  in.lite.pop_back();
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

LoadTerms ProjectedLoad::terms(Id instance, Time now, Time tau) const {
  LoadTerms t;
  auto it = by_instance_.find(instance);
  if (it == by_instance_.end()) return t;
  const double vs = v_sys();
  const std::vector<Lite>& lite = it->second.lite;
  const std::vector<Tracked>& full = it->second.full;
  est_.prepare();
  // The sums in locals and the options read once: the same terms added in the same order
  // (a decision reads every tracked request, so this loop is SIBYL's hot path).
  const bool type1 = opt_.type1, type2 = opt_.type2, type3 = opt_.type3, prob = opt_.prob, reqlevel = opt_.reqlevel;
  double s1 = t.type1, s2 = t.type2, s3 = t.type3;
  for (size_t i = 0; i < lite.size(); ++i) {
    const Lite& k = lite[i];
    const double lin = double(k.prompt_len);  // REQLEVEL replaces M by 1 below
    if (k.active) {
      if (!type1) continue;
      const Tracked& f = full[i];
      const double l_now = double(f.generated);  // Alg. 1 line 7
      const double dt = f.t_last - f.t0;         // rate(f), with v_sys() read once above
      const double v = (dt > 1e-9 && f.generated > f.g0) ? double(f.generated - f.g0) / dt : vs;
      const double l_tau = l_now + v * std::max(0.0, tau - now);
      const double m = reqlevel ? 1.0 : lin + l_tau;                     // Alg. 1 line 8
      s1 += m * (prob ? est_.conditional_prepared(l_now, l_tau) : 1.0);  // Eq. 6
    } else {  // both pending forms computed, one added (+0.0 leaves a sum unchanged): no branch
      const bool t2 = k.tau <= tau;
      const double g = vs * (tau - k.tau);                             // Alg. 1 line 12
      const double m = reqlevel ? 1.0 : lin + g;                       // Alg. 1 line 14
      const double v2 = m * (prob ? est_.survival_prepared(g) : 1.0);  // Eq. 7
      const double pen = std::max(0.0, lin - vs * (k.tau - tau));      // Eq. 8
      const double v3 = reqlevel ? (pen > 0 ? 1.0 : 0.0) : pen;
      s2 += (t2 && type2) ? v2 : 0.0;
      s3 += (!t2 && type3) ? v3 : 0.0;
    }
  }
  t.type1 = s1, t.type2 = s2, t.type3 = s3;
  return t;
}

int ProjectedLoad::argmin(const std::vector<Id>& instances, Time now, Time tau, std::vector<double>* loads) const {
  int best = -1;
  double best_l = std::numeric_limits<double>::infinity();
  if (loads) loads->assign(instances.size(), 0.0);
  for (size_t i = 0; i < instances.size(); ++i) {
    const double l = load(instances[i], now, tau);
    if (loads) (*loads)[i] = l;
    if (l < best_l) best = int(i), best_l = l;  // Alg. 1 line 20
  }
  return best;
}

}  // namespace slocore::sibyl
