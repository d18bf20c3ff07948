// ProServe GoRouting, ProServe Alg. 2 (see proserve/goroute.h).
#include "slocore/proserve/goroute.h"

#include <algorithm>
#include <cmath>

#include "slocore/core/errors.h"

namespace slocore::proserve {

void GoRouteParams::validate() const {
  check_params(*this, "goroute");
  require(lambda >= mu, "goroute.lambda", "must be >= mu");
}

ParamMap GoRoutePolicy::params() const { return write_params(p_); }

namespace {

double ttft_deadline(const Request& r) { return token_deadline(r, 1); }

// The queue (plus `extra`) in first-token deadline order, stable.
std::vector<const Request*> ordered(const RouteQueue& q, const Request* extra) {
  std::vector<const Request*> v;
  v.reserve(q.queue.size() + 1);
  for (const Request& r : q.queue) v.push_back(&r);
  if (extra) v.push_back(extra);
  std::stable_sort(v.begin(), v.end(),
                   [](const Request* a, const Request* b) { return ttft_deadline(*a) < ttft_deadline(*b); });
  return v;
}

double elapsed(const GoRouteParams& p, const RouteQueue& q, Time now) {
  return p.compensate && !q.queue.empty() ? std::max(0.0, now - q.ts) : 0.0;
}

// Colocated phi_a factor: batches per unit of prefill work, with n_d decodes in each batch.
double colocated_factor(const RouteQueue& q, const LatencyModel& m, const Request* extra, const Request& req,
                        Time now) {
  // As in SlideBatching, a request already past its TTFT does not shrink the budget.
  double t_budget = req.slo.tpot;
  auto tighten = [&](const Request& r) {
    const double remain = ttft_deadline(r) - now;
    if (remain > 0) t_budget = std::min(t_budget, remain);
  };
  for (const Request& r : q.queue) tighten(r);
  if (extra) tighten(*extra);
  t_budget = std::max(t_budget, 1e-3);
  if (!std::isfinite(t_budget)) return 1.0;  // no target: work back to back
  const double room = t_budget - m.overhead() - double(q.n_d) * m.decode_cost(req.prompt_len);
  return room > 0 ? t_budget / room : kNever;
}

}  // namespace

double estimate_exec(const GoRouteParams& p, const RouteQueue& q, const LatencyModel& m, const Request* extra,
                     const Request& req, Time now) {
  double work = 0.0;
  size_t n = 0;
  for (const Request& r : q.queue) work += m.prefill_cost(r.prompt_len, 0), ++n;
  if (extra) work += m.prefill_cost(extra->prompt_len, 0), ++n;
  double t;
  if (p.mode == GoMode::Colocated) {
    const double f = colocated_factor(q, m, extra, req, now);
    t = n == 0 ? 0.0 : (f >= kNever ? kNever : f * work);
  } else {
    t = work + double(n) * m.overhead();  // phi_p
  }
  return std::max(0.0, t - elapsed(p, q, now));
}

double estimate_gain(const GoRouteParams& p, const RouteQueue& q, const LatencyModel& m, const Request* extra,
                     const Request& req, Time now) {
  const double start = now - elapsed(p, q, now);
  double gain = 0.0;
  if (p.mode == GoMode::Colocated && p.gain_phi == Phi::Conservative) {  // phi_c: each at its deadline-order position
    const double f = colocated_factor(q, m, extra, req, now);
    double t = start;
    for (const Request* r : ordered(q, extra)) {
      t += f * m.prefill_cost(r->prompt_len, 0);
      if (std::max(t, now) < ttft_deadline(*r)) gain += token_weight(*r, 1, p.weights);
    }
    return gain;
  }
  if (p.mode == GoMode::Colocated) {  // phi_a: every queued prefill done when the whole queue is
    const double done = now + estimate_exec(p, q, m, extra, req, now);
    for (const Request& r : q.queue) gain += done < ttft_deadline(r) ? token_weight(r, 1, p.weights) : 0.0;
    if (extra && done < ttft_deadline(*extra)) gain += token_weight(*extra, 1, p.weights);
    return gain;
  }
  double t = start;  // phi_p in deadline order: one request per batch
  for (const Request* r : ordered(q, extra)) {
    t += m.prefill_cost(r->prompt_len, 0) + m.overhead();
    if (std::max(t, now) < ttft_deadline(*r)) gain += token_weight(*r, 1, p.weights);
  }
  return gain;
}

const RouteQueue* GoRoutePolicy::queue_of(Id instance) const {
  auto it = queues_.find(instance);
  return it == queues_.end() ? nullptr : &it->second;
}

int GoRoutePolicy::choose(const Request& r, Time now, const std::vector<InstanceView>& views) {
  std::vector<int> ok;
  for (size_t i = 0; i < views.size(); ++i)
    if (views[i].accepting) ok.push_back(int(i));
  if (ok.empty()) return -1;
  int pick = -1;
  if (p_.mode == GoMode::Decode) {  // LOADBALANCE: most free KV blocks, net of this poll's placements
    double best = -kNever;
    for (int i : ok) {
      const InstanceView& v = views[size_t(i)];
      const double free = double(v.kv_blocks_free) - double(placed_tokens(v.id)) / double(v.block_size);
      if (free > best) best = free, pick = i;
    }
    return pick;
  }
  std::vector<double> delta(ok.size()), exec0(ok.size()), exec1(ok.size());
  std::vector<Request> uncached(ok.size(), r);  // r as each candidate would prefill it
  PromptChains chains(r);
  double dmax = -kNever;
  static const RouteQueue kEmpty;
  for (size_t k = 0; k < ok.size(); ++k) {  // lines 2-7
    const InstanceView& v = views[size_t(ok[k])];
    if (!r.prefix.empty())  // prefix caching: only the uncached prompt tokens are prefilled
      uncached[k].prompt_len = std::max<Tokens>(1, r.prompt_len - v.cached_prefix_tokens(chains.get(v.block_size)));
    const Request& rk = uncached[k];
    auto it = queues_.find(v.id);
    const RouteQueue& q = it == queues_.end() ? kEmpty : it->second;
    delta[k] = estimate_gain(p_, q, v.model, &rk, r, now) - estimate_gain(p_, q, v.model, nullptr, r, now);
    exec0[k] = estimate_exec(p_, q, v.model, nullptr, r, now);
    exec1[k] = estimate_exec(p_, q, v.model, &rk, r, now);
    dmax = std::max(dmax, delta[k]);
  }
  auto argbest = [&](const std::vector<size_t>& set, const std::vector<double>& key, bool want_max) {
    size_t b = set.front();
    for (size_t k : set)
      if (want_max ? key[k] > key[b] : key[k] < key[b]) b = k;
    return b;
  };
  size_t chosen;
  if (dmax > 0) {
    std::vector<size_t> C, L, CmH;  // line 8, 10, C - H
    for (size_t k = 0; k < ok.size(); ++k) {
      if (delta[k] < p_.alpha * dmax) continue;
      C.push_back(k);
      if (exec0[k] < p_.mu * r.slo.ttft) L.push_back(k);
      if (!(exec1[k] > p_.lambda * r.slo.ttft)) CmH.push_back(k);
    }
    if (!L.empty())
      chosen = argbest(L, exec0, false);  // line 13
    else if (!CmH.empty())
      chosen = argbest(CmH, exec0, true);  // line 15
    else
      chosen = argbest(C, exec0, false);  // line 17
  } else if (p_.fallback == Fallback::Random) {
    chosen = std::uniform_int_distribution<size_t>(0, ok.size() - 1)(rng_);  // line 19
  } else {
    std::vector<size_t> all(ok.size());
    for (size_t k = 0; k < all.size(); ++k) all[k] = k;
    chosen = argbest(all, exec0, false);
  }
  pick = ok[chosen];
  RouteQueue& q = queues_[views[size_t(pick)].id];  // PrefillQueueMap[p].add(r)
  q.queue.push_back(uncached[chosen]);
  q.ts = now;
  return pick;
}

void GoRoutePolicy::first_token(Id request, Id instance, Time now) {
  auto it = queues_.find(instance);
  if (it == queues_.end()) return;
  auto& qq = it->second.queue;
  auto r = std::find_if(qq.begin(), qq.end(), [&](const Request& x) { return x.id == request; });
  if (r == qq.end()) return;
  qq.erase(r);
  it->second.ts = now;
  if (p_.mode == GoMode::Colocated) {
    it->second.n_d += 1;
    decoding_[request] = true;
  }
}

void GoRoutePolicy::on_prefill_done(Id request, Id instance, Time now) { first_token(request, instance, now); }

void GoRoutePolicy::on_token(Id request, Id instance, Tokens generated, Time now) {
  if (generated == 1) first_token(request, instance, now);
}

void GoRoutePolicy::on_finished(Id request, Id instance, Time now) {
  first_token(request, instance, now);  // a one-token request leaves the queue here
  auto d = decoding_.find(request);
  if (d != decoding_.end()) {
    auto it = queues_.find(instance);
    if (it != queues_.end()) it->second.n_d = std::max<int64_t>(0, it->second.n_d - 1);
    decoding_.erase(d);
  }
}

void GoRoutePolicy::on_instance_removed(Id instance, Time) { queues_.erase(instance); }

}  // namespace slocore::proserve
