// HFX dispatcher / P-stage dispatcher / D-stage migrator (see slocore/hfx/dispatcher.h).
#include "slocore/hfx/dispatcher.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

namespace slocore::hfx {

void DispatcherParams::validate() const { check_params(*this, "hfx"); }

double token_budget(double ttft, double tpot, double e_d, double a, double b) {
  if (!std::isfinite(ttft) || !std::isfinite(tpot) || b <= 0.0) return kNever;
  return (ttft * tpot - ttft * e_d - a * tpot) / (b * tpot);  // Eq. 5
}

double admission_p(Time arrival, double ttft, double prefill_s, Time now, double util, double util_exp) {
  if (!std::isfinite(ttft)) return 1.0;
  const double slack = arrival + ttft - (now + prefill_s);  // Alg. 1 calculate_p
  double p = std::clamp(slack / ttft, 0.0, 1.0);
  if (util_exp > 0.0) p *= std::pow(std::clamp(1.0 - util, 0.0, 1.0), util_exp);
  return p;
}

Time maturity_time(Time now, double e_p, double e_d, double min_tpot) {
  const double relax = min_tpot - e_d;  // Alg. 1: time saved per decode iteration
  if (!(relax > 0.0)) return now + e_p + e_d;
  if (!std::isfinite(relax)) return now + e_p;
  return now + e_p + (e_p / relax) * e_d;
}

InstanceLoad instance_load(const InstanceView& v) {
  InstanceLoad L;
  int64_t waiting_blocks = 0;
  v.for_each_request([&](const RequestState& s, bool running) {
    L.idle = false;
    L.min_ttft = std::min(L.min_ttft, s.request.slo.ttft);
    L.min_tpot = std::min(L.min_tpot, s.request.slo.tpot);
    const double cur = double(s.num_tokens());
    L.all_ctx += cur;
    L.all_batch += 1;
    if (s.in_prefill()) {
      const double k = double(s.to_compute());
      L.prefill_tokens += k;
      L.prefill_sq += k * k;
    } else {
      L.decode_ctx += cur;
      L.decode_batch += 1;
    }
    if (!running) waiting_blocks += v.blocks_for(s.num_tokens());
  });
  L.kv_free_tokens = double(std::max<int64_t>(v.kv_blocks_free - waiting_blocks, 0) * v.block_size);
  return L;
}

Dispatcher::Dispatcher(DispatcherParams p, std::string name) : p_(std::move(p)), name_(std::move(name)) {
  p_.validate();
  stage_ = p_.role;
}

ParamMap Dispatcher::params() const { return write_params(p_); }

Dispatcher::Key Dispatcher::key_of(Queued& q) const {
  const Request& r = q.req;
  return {stage_ == Role::Prefill ? r.slo.ttft : r.slo.tpot, r.arrival, r.id, r.prompt_len, &q};
}

void Dispatcher::submit(const Request& r, Time now, Time) {
  validate(r);
  if (reqs_.count(r.id)) fail("request.id", "duplicate id " + std::to_string(r.id) + " in " + name_);
  incoming_.push_back(key_of(reqs_.emplace(r.id, Queued{r, 0, {}}).first->second));
  if (p_.tight_window > 0) {
    for (auto* q : {&recent_ttft_, &recent_tpot_}) {
      const double v = q == &recent_ttft_ ? r.slo.ttft : r.slo.tpot;
      while (!q->empty() && q->back().second >= v) q->pop_back();
      q->emplace_back(now, v);
    }
  }
}

void Dispatcher::on_cancelled(Id request, Time) {
  if (!reqs_.count(request)) return;
  compact();
  for (auto* q : {&incoming_, &queue_})
    q->erase(std::remove_if(q->begin(), q->end(), [&](const Key& k) { return k.id == request; }), q->end());
  reqs_.erase(request);
}

size_t Dispatcher::next_present(size_t i) const {
  while (i < queue_.size() && queue_[i].gone) ++i;
  return i;
}

void Dispatcher::remove(size_t i) {
  queue_[i].gone = true;
  ++gone_;
  if (!index_fresh_) return;
  if (stage_ == Role::Decode)
    fit_.set(i, MinTree::kNone);
  else
    alive_.set(i, MinTree::kNone), dead_.set(i, MinTree::kNone);
}

void Dispatcher::compact() {
  if (gone_ > 0)
    queue_.erase(std::remove_if(queue_.begin(), queue_.end(), [](const Key& k) { return k.gone; }), queue_.end());
  gone_ = head_ = 0;
  index_fresh_ = false;
}

void Dispatcher::refresh_index(Time now) {
  if (!index_fresh_ && stage_ == Role::Decode) {
    fit_.reset(queue_.size());
    for (size_t i = 0; i < queue_.size(); ++i)
      if (!queue_[i].gone) fit_.put(i, double(queue_[i].len + 1));
    fit_.build();
    index_fresh_ = true;
  }
  if (stage_ == Role::Decode) return;
  if (!index_fresh_) {
    const size_t n = queue_.size();
    alive_.reset(n);
    dead_.reset(n);
    deaths_.clear();
    next_death_ = 0;
    for (size_t i = 0; i < n; ++i) {
      const Key& k = queue_[i];
      if (k.gone) continue;
      if (k.dead) {
        dead_.put(i, shortest(k));
        continue;
      }
      alive_.put(i, 0.0);
      if (std::isfinite(k.req().slo.ttft)) deaths_.emplace_back(k.req().arrival + k.req().slo.ttft, i);
    }
    alive_.build();
    dead_.build();
    std::sort(deaths_.begin(), deaths_.end());
    index_fresh_ = true;
  }
  // The same sum admission_p forms: slack = (arrival + TTFT) - (now + E_prefill) <= 0.
  for (; next_death_ < deaths_.size() && deaths_[next_death_].first <= now; ++next_death_) {
    const size_t i = deaths_[next_death_].second;
    Key& k = queue_[i];
    if (k.gone || k.dead) continue;
    k.dead = true;
    alive_.set(i, MinTree::kNone);
    dead_.set(i, shortest(k));
  }
}

double Dispatcher::recent_min(std::deque<std::pair<Time, double>>& q, Time now) const {
  while (!q.empty() && q.front().first < now - p_.tight_window) q.pop_front();
  return q.empty() ? kNever : q.front().second;
}

double Dispatcher::last_budget(Id instance) const {
  auto it = budget_.find(instance);
  if (it == budget_.end()) throw UnknownId("instance " + std::to_string(instance) + ": no budget computed yet");
  return it->second;
}

Time Dispatcher::next_wakeup() const {
  if (pending() == 0 || workers_.empty()) return kNever;
  return std::min(workers_.top().second, next_monitor_);
}

void Dispatcher::sync(Time now, const std::vector<InstanceView>& views) {
  // The caller's views are the truth about which instances exist and accept work.
  std::unordered_set<Id> live;
  for (const InstanceView& v : views) {
    if (!v.accepting) continue;
    live.insert(v.id);
    if (!workers_.contains(v.id)) workers_.set(v.id, now);
  }
  for (const auto& [id, key] : workers_.items())
    if (!live.count(id)) workers_.erase(id);
  if (now >= next_monitor_) {  // monitor correction: an idle instance is mature now
    for (const InstanceView& v : views)
      if (v.accepting && v.running.empty() && v.waiting.empty() && workers_.key(v.id) > now) workers_.set(v.id, now);
    next_monitor_ = now + p_.monitor_interval;
  }
}

void Dispatcher::merge_incoming() {
  if (incoming_.empty()) return;
  std::sort(incoming_.begin(), incoming_.end());
  const size_t mid = queue_.size();
  queue_.insert(queue_.end(), incoming_.begin(), incoming_.end());
  std::inplace_merge(queue_.begin(), queue_.begin() + std::ptrdiff_t(mid), queue_.end());
  incoming_.clear();
  head_ = 0;
  index_fresh_ = false;
}

std::vector<Assignment> Dispatcher::poll(Time now, const std::vector<InstanceView>& views) {
  std::vector<Assignment> out;
  sync(now, views);
  merge_incoming();
  if (queued() == 0) return out;
  std::unordered_map<Id, const InstanceView*> by_id;
  for (const InstanceView& v : views) by_id[v.id] = &v;
  std::vector<Id> matured;  // Alg. 1: Q_W.pop() while the earliest worker has matured
  while (!workers_.empty() && workers_.top().second <= now) {
    matured.push_back(workers_.top().first);
    workers_.erase(matured.back());
  }
  for (Id w : matured) {
    if (queued() == 0) {  // nothing to give: stays available
      workers_.set(w, now);
      continue;
    }
    for (Id r : dispatch_one(now, *by_id.at(w))) out.push_back({r, w});
  }
  return out;
}

std::vector<Id> Dispatcher::dispatch_one(Time now, const InstanceView& v) {
  const InstanceLoad L = instance_load(v);
  const std::vector<size_t> idx =
      stage_ == Role::Decode ? dispatch_decode(now, v, L) : dispatch_prefill_like(now, v, L);
  std::vector<Id> taken;
  for (size_t i : idx) {
    taken.push_back(queue_[i].id);
    reqs_.erase(queue_[i].id);
    remove(i);
  }
  if (2 * gone_ > queue_.size()) compact();  // amortised O(1) per dispatched request
  return taken;
}

double Dispatcher::uncached_len(const Key& k, const InstanceView& v) {
  if (k.req().prefix.empty()) return double(k.len);
  Queued& q = *k.queued;
  if (q.chain_block_size != v.block_size || q.chain.empty())
    q.chain_block_size = v.block_size, q.chain = prompt_block_hashes(q.req, v.block_size);
  return double(std::max<Tokens>(1, k.len - v.cached_prefix_tokens(q.chain)));
}

std::vector<size_t> Dispatcher::dispatch_prefill_like(Time now, const InstanceView& v, const InstanceLoad& L) {
  const LatencyModel& m = v.model;
  const double a = m.overhead(), b = m.correction() * m.coeffs().c_p;
  const size_t head = head_ = next_present(head_);
  const Request& head_req = queue_[head].req();
  double budget;
  if (stage_ == Role::Colocated) {
    // Eq. 5 with the tightest TTFT/TPOT of the instance's requests and the queue head; E_d is
    // the ongoing decode batch (Eq. 2). Prefill work already on the instance uses it first.
    const double e_d = L.decode_batch > 0 ? m.stage_decode(L.decode_ctx, L.decode_batch) : 0.0;
    const double ttft = std::min({L.min_ttft, head_req.slo.ttft, recent_min(recent_ttft_, now)});
    const double tpot = std::min({L.min_tpot, head_req.slo.tpot, recent_min(recent_tpot_, now)});
    budget = token_budget(ttft, tpot, e_d, a, b);
  } else {
    // P stage: one static prefill batch, a + b*n <= strictest TTFT in the queue (Sec. 3.3.1).
    const double ttft = head_req.slo.ttft;  // the queue is ordered by TTFT
    budget = std::isfinite(ttft) && b > 0 ? (ttft - a) / b : kNever;
  }
  budget -= L.prefill_tokens;
  double limit = std::min(budget, L.kv_free_tokens);  // Alg. 1: min(free_token, get_ntoken)
  if (p_.dispatch_cap > 0) limit = std::min(limit, p_.dispatch_cap * double(v.max_batch_tokens));
  budget_[v.id] = limit;
  const double util = v.kv_utilization();
  constexpr size_t kNone = size_t(-1);
  std::vector<size_t> taken, late;
  double used = 0.0, sum = L.prefill_tokens, sq = L.prefill_sq;
  size_t first_ok = kNone;
  auto feasible = [&](const Key& k) {
    const Request& r = k.req();
    const double l = uncached_len(k, v);
    const double p = admission_p(r.arrival, r.slo.ttft, m.stage_prefill(l, l * l), now, util, p_.util_exp);
    return p > 0.0 && p >= p_.theta;
  };
  // Dead requests (see the header) are infeasible here when E_prefill >= 0 (coefficients >= 0):
  // the first pass skips them, the best-effort pass finds those that fit. Otherwise (or with
  // a NaN limit) every queued request is scanned.
  const LatencyCoeffs& c = m.coeffs();
  const bool skip_dead = m.correction() >= 0 && c.t_c >= 0 && c.c_p >= 0 && c.a_p >= 0 && !std::isnan(limit);
  if (skip_dead) refresh_index(now);
  auto next = [&](size_t i) { return skip_dead ? alive_.first_at_most(i, 0.0) : next_present(i); };
  for (size_t i = next(head); i < queue_.size(); i = next(i + 1)) {  // Alg. 1 lines 10-13: stricter SLO first
    const Key& k = queue_[i];
    const double l = uncached_len(k, v);
    const bool fits = limit - used >= 1.0 && used + l <= limit;
    if (!fits) {  // p only matters here for the idle fallback below
      if (L.idle && first_ok == kNone && feasible(k)) first_ok = i;
      if (limit - used < 1.0 && (!L.idle || first_ok != kNone)) break;
      continue;
    }
    const bool ok = feasible(k);
    if (ok && first_ok == kNone) first_ok = i;
    if (!ok) {
      late.push_back(i);
      continue;
    }
    taken.push_back(i);
    used += l, sum += l, sq += l * l;
  }
  // TTFT already lost: best effort with the leftover budget, never dropped. With skip_dead the
  // dead requests join `late` in queue order; one is visited only if its shortest possible
  // length fits (used and every l are whole token counts, so l <= limit - used exactly).
  size_t dead_from = 0;
  for (size_t li = 0; p_.best_effort;) {
    const size_t next_late = li < late.size() ? late[li] : queue_.size();
    const size_t d = skip_dead ? dead_.first_at_most(dead_from, std::nextafter(limit - used, kNever)) : queue_.size();
    size_t i;
    if (d < next_late) {
      i = d, dead_from = d + 1;
    } else if (li < late.size()) {
      i = next_late, ++li;
    } else {
      break;
    }
    const double l = uncached_len(queue_[i], v);
    if (used + l > limit) continue;
    taken.push_back(i);
    used += l, sum += l, sq += l * l;
  }
  if (taken.empty() && L.idle) {  // no livelock: an idle instance takes one request
    const size_t i = first_ok != kNone ? first_ok : head;
    taken.push_back(i);
    const double l = uncached_len(queue_[i], v);
    sum += l, sq += l * l;
  }
  // Next maturity (Alg. 1 lines 15-19 for colocated; end of the prefill batch for P stage).
  const double e_p = m.stage_prefill(sum, sq);
  if (stage_ == Role::Prefill) {
    workers_.set(v.id, std::max(now, v.busy_until) + e_p);
  } else {
    double ctx = L.all_ctx, batch = L.all_batch, tpot = L.min_tpot;
    for (size_t i : taken) {
      const Request& r = queue_[i].req();
      ctx += double(r.prompt_len);
      batch += 1;
      tpot = std::min(tpot, r.slo.tpot);
    }
    workers_.set(v.id, maturity_time(now, e_p, m.stage_decode(ctx, batch), tpot));
  }
  return taken;
}

std::vector<size_t> Dispatcher::dispatch_decode(Time now, const InstanceView& v, const InstanceLoad& L) {
  // D-stage migrator (Sec. 3.3.1): admit while the next decode iteration (Eq. 2) stays within
  // the strictest TPOT of the running batch, or of the queue when the instance is idle.
  const LatencyModel& m = v.model;
  double ctx = L.all_ctx, batch = L.all_batch;
  const size_t head = head_ = next_present(head_);
  double tpot = L.idle ? queue_[head].req().slo.tpot : L.min_tpot;
  double kv_free = L.kv_free_tokens;
  std::vector<size_t> taken;
  double slots = 0.0;
  // A request needing more KV than is free is skipped: with a known kv_free the min-tree of
  // c = prompt_len + 1 jumps to the next one that fits it (the break test below reads only
  // what changes when a request is taken, so it gives the same answer one request later).
  const bool skip_big = !std::isnan(kv_free);
  if (skip_big) refresh_index(now);
  auto next = [&](size_t i) { return skip_big ? fit_.first_at_most(i, kv_free) : next_present(i); };
  for (size_t i = next(head); i < queue_.size(); i = next(i + 1)) {
    if (m.stage_decode(ctx + 1.0, batch + 1.0) > tpot) break;  // not even the shortest fits
    const Request& r = queue_[i].req();
    const double c = double(r.prompt_len + 1);
    const double lim = std::min(tpot, r.slo.tpot);
    if (c > kv_free || m.stage_decode(ctx + c, batch + 1.0) > lim) continue;
    taken.push_back(i);
    ctx += c, batch += 1, tpot = lim, kv_free -= c, slots += 1;
  }
  if (taken.empty() && L.idle) {
    taken.push_back(head);
    ctx += double(queue_[head].len + 1), batch += 1;
  }
  budget_[v.id] = slots;
  // Maturity: the end of the next decode iteration.
  workers_.set(v.id, std::max(now, v.busy_until) + m.stage_decode(ctx, batch));
  return taken;
}

}  // namespace slocore::hfx
