// ProServe GoRouting, ProServe Alg. 2 (see proserve/goroute.h).
#include "slocore/proserve/goroute.h"

#include <algorithm>
#include <cmath>
#include <cstring>

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
  for (const auto& r : q.queue) v.push_back(r.get());
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
  for (const auto& r : q.queue) tighten(*r);
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
  for (const auto& r : q.queue) work += m.prefill_cost(r->prompt_len, 0), ++n;
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
    for (const auto& r : q.queue) gain += done < ttft_deadline(*r) ? token_weight(*r, 1, p.weights) : 0.0;
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

// ---- the per-queue state a decision reads (RouteQueue::by_deadline, work) ----

CostKey cost_key(const LatencyModel& m) {
  const LatencyCoeffs& c = m.coeffs();
  return {m.correction(), c.a_p, c.b_p, c.c_p, true};
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

bool same_key(const CostKey& a, const CostKey& b) {
  return a.valid && b.valid && same_bits(a.beta, b.beta) && same_bits(a.a_p, b.a_p) && same_bits(a.b_p, b.b_p) &&
         same_bits(a.c_p, b.c_p);
}

bool by_deadline_seq(const Queued& a, const Queued& b) {
  return a.deadline < b.deadline || (a.deadline == b.deadline && a.seq < b.seq);
}

// by_deadline's costs and the queue's work, for model m: recomputed only when m's prefill
// coefficients changed (online correction) or, for work, after a removal.
void refresh(RouteQueue& q, const LatencyModel& m) {
  const CostKey k = cost_key(m);
  if (!same_key(q.costed, k)) {
    q.bad_costs = 0;
    for (Queued& e : q.by_deadline) {
      e.cost = m.prefill_cost(e.prompt_len, 0);
      q.bad_costs += !(e.cost >= 0);
    }
    q.costed = k;
    q.work_valid = false;
  }
  if (!q.work_valid) {
    double work = 0.0;  // in queue order, as the scans sum it
    for (const Queued& r : q.brief) work += m.prefill_cost(r.prompt_len, 0);
    q.work = work;
    q.work_valid = true;
  }
}

// PrefillQueueMap[p].add(r): `added` is q.queue's new last request.
void push_queued(RouteQueue& q, const Request& added, const LatencyModel& m, const TdgWeights& w) {
  Queued e{ttft_deadline(added), token_weight(added, 1, w), added.prompt_len};
  e.id = added.id;
  e.seq = q.next_seq++;
  q.brief.push_back(e);
  ++q.entries.try_emplace(e.id, RouteQueue::Entries{e.seq, 0}).first->second.count;
  const bool costed = same_key(q.costed, cost_key(m));
  if (!costed) q.costed.valid = false;  // every cost recomputed when next read
  const double cost = costed ? m.prefill_cost(added.prompt_len, 0) : 0.0;
  if (q.work_valid && costed)
    q.work += cost;  // the sum in queue order, one more term
  else
    q.work_valid = false;
  if (std::isnan(e.deadline)) {
    ++q.nan_deadlines;
    return;
  }
  e.cost = cost;
  q.bad_costs += costed && !(cost >= 0);
  // Its seq is the largest: after every equal deadline.
  q.by_deadline.insert(std::upper_bound(q.by_deadline.begin(), q.by_deadline.end(), e, by_deadline_seq), e);
}

// Removes q.queue[i] (and its brief entry, index for index).
void remove_queued(RouteQueue& q, size_t i) {
  const Queued e = q.brief[i];
  q.brief.erase(q.brief.begin() + std::ptrdiff_t(i));
  q.queue.erase(q.queue.begin() + std::ptrdiff_t(i));
  if (auto n = q.entries.find(e.id); n != q.entries.end() && --n->second.count == 0) {
    q.entries.erase(n);
  } else if (n != q.entries.end() && n->second.first_seq == e.seq) {  // a retried id: its next entry
    auto next =
        std::find_if(q.brief.begin() + std::ptrdiff_t(i), q.brief.end(), [&](const Queued& x) { return x.id == e.id; });
    n->second.first_seq = next->seq;
  }
  q.work_valid = false;
  if (std::isnan(e.deadline)) {
    --q.nan_deadlines;
    return;
  }
  auto it = std::lower_bound(q.by_deadline.begin(), q.by_deadline.end(), e, by_deadline_seq);
  if (it == q.by_deadline.end() || it->seq != e.seq) {  // not kept in order: rebuild
    q.by_deadline.clear();
    for (const Queued& r : q.brief)
      if (!std::isnan(r.deadline)) q.by_deadline.push_back(r);
    std::stable_sort(q.by_deadline.begin(), q.by_deadline.end(), by_deadline_seq);
    q.costed.valid = false;
    return;
  }
  if (q.costed.valid) q.bad_costs -= !(it->cost >= 0);
  q.by_deadline.erase(it);
}

// sum over the queue, in queue order, of the Eq. 3 weights of the requests whose first-token
// deadline is after `done` (ESTIMATEGAIN's phi_a sum): only those are read, put back in queue
// order (the terms skipped are + 0.0, which leaves a sum that starts at +0.0 unchanged); a
// plain pass when they are many.
double queue_gain(const RouteQueue& q, double done, std::vector<Queued>& scratch) {
  auto from = std::upper_bound(q.by_deadline.begin(), q.by_deadline.end(), done,
                               [](double x, const Queued& e) { return x < e.deadline; });
  const size_t n = size_t(q.by_deadline.end() - from);
  double gain = 0.0;
  if (n == 0) return gain;
  if (8 * n > q.brief.size()) {
    for (const Queued& r : q.brief) gain += done < r.deadline ? r.weight : 0.0;
    return gain;
  }
  scratch.assign(from, q.by_deadline.end());
  std::sort(scratch.begin(), scratch.end(), [](const Queued& a, const Queued& b) { return a.seq < b.seq; });
  for (const Queued& r : scratch) gain += r.weight;
  return gain;
}

// ESTIMATEEXEC and ESTIMATEGAIN of one instance for a decision, without and with r: what
// estimate_exec/estimate_gain compute (the same operations on the same doubles, in the same
// order), from the queue's kept state: its work sum, and its requests in deadline order
// (colocated phi_a: the smallest remaining TTFT and the requests still on time by a binary
// search; P/D phi_p: the walk in deadline order stops once both clocks are past the last
// deadline, since a clock that only grows cannot meet a deadline after that). Returns false
// where it does not apply (colocated phi_c; in P/D, a NaN first-token deadline, which has no
// stable order).
struct Evaluation {
  double exec0 = 0.0, exec1 = 0.0, delta = 0.0;
};

bool evaluate(const GoRouteParams& p, RouteQueue& q, const LatencyModel& m, const Request& rk, const Request& req,
              Time now, std::vector<Queued>& scratch, Evaluation& out) {
  if (q.brief.size() != q.queue.size()) return false;
  const double el = elapsed(p, q, now);
  if (p.mode == GoMode::Colocated && p.gain_phi == Phi::Aggressive) {
    refresh(q, m);
    const double work = q.work;
    double t_budget = req.slo.tpot;  // min over the queue of the remaining TTFTs > 0
    auto first_after = std::upper_bound(q.by_deadline.begin(), q.by_deadline.end(), now,
                                        [](double x, const Queued& e) { return x < e.deadline; });
    if (first_after != q.by_deadline.end()) t_budget = std::min(t_budget, first_after->deadline - now);
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
    const double gain0 = queue_gain(q, done0, scratch);
    double gain1 = queue_gain(q, done1, scratch);
    if (done1 < ttft_deadline(rk)) gain1 += token_weight(rk, 1, p.weights);
    out.delta = gain1 - gain0;
    return true;
  }
  if (p.mode != GoMode::Pd || q.nan_deadlines > 0) return false;
  // phi_p: the queue in first-token deadline order (stable), r after every equal deadline.
  const double cost_k = m.prefill_cost(rk.prompt_len, 0);
  const Queued k{ttft_deadline(rk), token_weight(rk, 1, p.weights), rk.prompt_len, cost_k};
  if (std::isnan(k.deadline)) return false;
  refresh(q, m);
  const std::vector<Queued>& order = q.by_deadline;
  const double work = q.work;
  const size_t at = size_t(std::upper_bound(order.begin(), order.end(), k.deadline,
                                            [](double x, const Queued& e) { return x < e.deadline; }) -
                           order.begin());
  const double n0 = double(q.queue.size()), n1 = double(q.queue.size() + 1);
  out.exec0 = std::max(0.0, work + n0 * m.overhead() - el);
  out.exec1 = std::max(0.0, (work + cost_k) + n1 * m.overhead() - el);
  const double start = now - el;
  double t0 = start, t1 = start, gain0 = 0.0, gain1 = 0.0;
  auto step = [&](const Queued& c, double& t, double& gain) {
    t += c.cost + m.overhead();  // prefill_cost(prompt, 0) + overhead, as estimate_gain
    if (std::max(t, now) < c.deadline) gain += c.weight;
  };
  // Every step adds a cost + overhead >= 0: once both clocks reach the last deadline, no later
  // request (r included) is on time.
  const bool grows = q.bad_costs == 0 && m.overhead() >= 0 && cost_k >= 0;
  const double last = std::max(order.empty() ? -kNever : order.back().deadline, k.deadline);
  for (size_t i = 0; i <= order.size(); ++i) {
    if (i == at) step(k, t1, gain1);
    if (i == order.size()) break;
    if (grows && t0 >= last && t1 >= last) break;
    step(order[i], t0, gain0);
    step(order[i], t1, gain1);
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
  for (size_t k = 0; k < ok.size(); ++k) {  // lines 2-7
    const InstanceView& v = views[size_t(ok[k])];
    if (!r.prefix.empty())  // prefix caching: only the uncached prompt tokens are prefilled
      uncached[k].prompt_len = std::max<Tokens>(1, r.prompt_len - v.cached_prefix_tokens(chains.get(v.block_size)));
    const Request& rk = uncached[k];
    auto it = queues_.find(v.id);
    RouteQueue& q = it == queues_.end() ? none_ : it->second;
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
  q.queue.push_back(std::make_unique<const Request>(std::move(uncached[chosen])));
  push_queued(q, *q.queue.back(), views[size_t(pick)].model, p_.weights);
  q.ts = now;
  return pick;
}

void GoRoutePolicy::first_token(Id request, Id instance, Time now) {
  auto it = queues_.find(instance);
  if (it == queues_.end()) return;
  RouteQueue& q = it->second;
  if (q.brief.size() == q.queue.size()) {  // found in the compact copy by its seq, index for index
    auto n = q.entries.find(request);
    if (n == q.entries.end()) return;
    const uint64_t seq = n->second.first_seq;
    auto r =
        std::lower_bound(q.brief.begin(), q.brief.end(), seq, [](const Queued& x, uint64_t s) { return x.seq < s; });
    require(r != q.brief.end() && r->id == request, "goroute", "a queued request's entry is not where its seq says");
    remove_queued(q, size_t(r - q.brief.begin()));
  } else {
    auto r = std::find_if(q.queue.begin(), q.queue.end(), [&](const auto& x) { return x->id == request; });
    if (r == q.queue.end()) return;
    q.queue.erase(r);
  }
  q.ts = now;
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
