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

namespace {

// ESTIMATEEXEC and ESTIMATEGAIN of one instance for a decision, without and with r: what
// estimate_exec/estimate_gain compute (the same operations on the same doubles, in the same
// order), but reading the queue twice in all instead of ten times (colocated phi_a) and
// ordering it once instead of twice (P/D phi_p). Returns false where it does not apply
// (colocated phi_c; a NaN first-token deadline, which has no stable order to reuse).
struct Evaluation {
  double exec0 = 0.0, exec1 = 0.0, delta = 0.0;
};

bool evaluate(const GoRouteParams& p, const RouteQueue& q, const LatencyModel& m, const Request& rk, const Request& req,
              Time now, std::vector<Queued>& scratch, Evaluation& out) {
  if (q.brief.size() != q.queue.size()) return false;
  const double el = elapsed(p, q, now);
  if (p.mode == GoMode::Colocated && p.gain_phi == Phi::Aggressive) {
    double work = 0.0, t_budget = req.slo.tpot;
    for (const Queued& r : q.brief) {
      work += m.prefill_cost(r.prompt_len, 0);
      const double remain = r.deadline - now;
      if (remain > 0) t_budget = std::min(t_budget, remain);
    }
    const double work1 = work + m.prefill_cost(rk.prompt_len, 0);
    double t_budget1 = t_budget;
    if (const double remain = ttft_deadline(rk) - now; remain > 0) t_budget1 = std::min(t_budget1, remain);
    auto factor = [&](double tb) {  // colocated_factor's tail
      tb = std::max(tb, 1e-3);
      if (!std::isfinite(tb)) return 1.0;
      const double room = tb - m.overhead() - double(q.n_d) * m.decode_cost(req.prompt_len);
      return room > 0 ? tb / room : kNever;
    };
    auto exec = [&](size_t n, double f, double w) {
      const double t = n == 0 ? 0.0 : (f >= kNever ? kNever : f * w);
      return std::max(0.0, t - el);
    };
    out.exec0 = exec(q.queue.size(), factor(t_budget), work);
    out.exec1 = exec(q.queue.size() + 1, factor(t_budget1), work1);
    const double done0 = now + out.exec0, done1 = now + out.exec1;
    double gain0 = 0.0, gain1 = 0.0;
    for (const Queued& r : q.brief) {
      gain0 += done0 < r.deadline ? r.weight : 0.0;
      gain1 += done1 < r.deadline ? r.weight : 0.0;
    }
    if (done1 < ttft_deadline(rk)) gain1 += token_weight(rk, 1, p.weights);
    out.delta = gain1 - gain0;
    return true;
  }
  if (p.mode != GoMode::Pd) return false;
  // phi_p: the queue in first-token deadline order (stable), r after every equal deadline.
  scratch.clear();
  double work = 0.0;
  bool sorted = true;
  for (const Queued& r : q.brief) {
    if (std::isnan(r.deadline)) return false;
    sorted = sorted && (scratch.empty() || !(r.deadline < scratch.back().deadline));
    scratch.push_back(r);
    work += scratch.back().cost = m.prefill_cost(r.prompt_len, 0);
  }
  const double cost_k = m.prefill_cost(rk.prompt_len, 0);
  const Queued k{ttft_deadline(rk), token_weight(rk, 1, p.weights), rk.prompt_len, cost_k};
  if (std::isnan(k.deadline)) return false;
  auto by_deadline = [](const Queued& a, const Queued& b) { return a.deadline < b.deadline; };
  if (!sorted) std::stable_sort(scratch.begin(), scratch.end(), by_deadline);
  const size_t at = size_t(std::upper_bound(scratch.begin(), scratch.end(), k, by_deadline) - scratch.begin());
  const double n0 = double(q.queue.size()), n1 = double(q.queue.size() + 1);
  out.exec0 = std::max(0.0, work + n0 * m.overhead() - el);
  out.exec1 = std::max(0.0, (work + cost_k) + n1 * m.overhead() - el);
  const double start = now - el;
  double t0 = start, t1 = start, gain0 = 0.0, gain1 = 0.0;
  auto step = [&](const Queued& c, double& t, double& gain) {
    t += c.cost + m.overhead();  // prefill_cost(prompt, 0) + overhead, as estimate_gain
    if (std::max(t, now) < c.deadline) gain += c.weight;
  };
  for (size_t i = 0; i <= scratch.size(); ++i) {
    if (i == at) step(k, t1, gain1);
    if (i == scratch.size()) break;
    step(scratch[i], t0, gain0);
    step(scratch[i], t1, gain1);
  }
  out.delta = gain1 - gain0;
  return true;
}

}  // namespace

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
    if (Evaluation e; evaluate(p_, q, v.model, rk, r, now, scratch_, e)) {
      delta[k] = e.delta, exec0[k] = e.exec0, exec1[k] = e.exec1;
    } else {
      delta[k] = estimate_gain(p_, q, v.model, &rk, r, now) - estimate_gain(p_, q, v.model, nullptr, r, now);
      exec0[k] = estimate_exec(p_, q, v.model, nullptr, r, now);
      exec1[k] = estimate_exec(p_, q, v.model, &rk, r, now);
    }
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
  const Request& added = q.queue.back();
  q.brief.push_back({ttft_deadline(added), token_weight(added, 1, p_.weights), added.prompt_len});
  q.ts = now;
  return pick;
}

void GoRoutePolicy::first_token(Id request, Id instance, Time now) {
  auto it = queues_.find(instance);
  if (it == queues_.end()) return;
  auto& qq = it->second.queue;
  auto r = std::find_if(qq.begin(), qq.end(), [&](const Request& x) { return x.id == request; });
  if (r == qq.end()) return;
  auto& brief = it->second.brief;
  if (brief.size() == qq.size()) brief.erase(brief.begin() + (r - qq.begin()));
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
