// The slocore stack's dispatch policy (see stack/slo_predict.h).
#include "slocore/stack/slo_predict.h"

#include <algorithm>
#include <cmath>

#include "slocore/core/errors.h"
#include "slocore/core/metrics.h"

namespace slocore::stack {

void SloPredictParams::validate() const {
  check_params(*this, "slo_predict");
  mapper.validate();
}

namespace {

// Deadline of r's i-th token (ProServe Eq. 3); the first one without the TPOT term, so that a
// request with no TPOT target (+inf) keeps a finite first-token deadline (0 * inf is NaN).
Time due(const Request& r, Tokens i) { return i == 1 ? r.arrival + r.slo.ttft : token_deadline(r, i); }

PendingPrefill pending_of(const LatencyModel& m, const RequestState& s) {
  return {due(s.request, s.generated + 1), s.to_compute(), m.prefill_cost(s.to_compute(), s.computed),
          s.request.prompt_len};
}

}  // namespace

SloPrediction predict_slo(const SloPredictParams& p, const InstanceView& v, const Request& r, Tokens cached, Time now,
                          const std::vector<PendingPrefill>& extra) {
  const LatencyModel& m = v.model;
  const bool prefill_only = v.role == Role::Prefill;
  // One iteration's cost besides its prefill tokens: the fixed cost and every running decode.
  double per_iter = m.overhead();
  double tpot = m.overhead();
  std::vector<PendingPrefill> q;
  q.reserve(v.num_requests() + extra.size());
  for (const RequestState& s : v.running) {
    if (s.in_prefill()) {
      q.push_back(pending_of(m, s));
    } else if (!prefill_only) {
      const double d = m.decode_cost(s.context_len());
      per_iter += d;
      tpot += d;
    }
  }
  for (const RequestState& s : v.waiting) q.push_back(pending_of(m, s));
  q.insert(q.end(), extra.begin(), extra.end());
  const Tokens own = std::max<Tokens>(1, r.prompt_len - cached);
  const PendingPrefill mine{due(r, 1), own, m.prefill_cost(own, cached), r.prompt_len};
  if (!prefill_only) {  // the decode batch r joins: today's decodes, every pending prefill, then r
    for (const PendingPrefill& x : q) tpot += m.decode_cost(x.context);
    tpot += m.decode_cost(mine.context);
  }
  size_t pos = q.size();
  if (p.order == QueueOrder::Deadline) {
    std::stable_sort(q.begin(), q.end(),
                     [](const PendingPrefill& a, const PendingPrefill& b) { return a.deadline < b.deadline; });
    pos = size_t(std::upper_bound(q.begin(), q.end(), mine.deadline,
                                  [](Time d, const PendingPrefill& x) { return d < x.deadline; }) -
                 q.begin());
  }
  const Tokens budget = std::max<Tokens>(1, v.max_batch_tokens);
  const double start = std::max(0.0, v.busy_until - now);
  auto finish = [&](double cost, Tokens tokens) {
    return now + (start + cost + double((tokens + budget - 1) / budget) * per_iter);
  };
  SloPrediction out;
  out.cached = cached;
  out.outstanding = int64_t(v.num_requests() + extra.size());
  double cost = 0.0;
  Tokens tokens = 0;
  for (size_t i = 0; i <= q.size(); ++i) {
    if (i == pos) {
      out.finish = finish(cost + mine.cost, tokens + mine.tokens);
      if (out.finish > mine.deadline) out.loss += 1;
    }
    if (i == q.size()) break;
    cost += q[i].cost;
    tokens += q[i].tokens;
    if (i >= pos) {  // behind r: on time without r, late with it?
      const bool late_without = finish(cost, tokens) > q[i].deadline;
      const bool late_with = finish(cost + mine.cost, tokens + mine.tokens) > q[i].deadline;
      if (late_with && !late_without) out.loss += 1;
    }
  }
  out.ttft = out.finish - r.arrival;
  out.tpot = prefill_only ? 0.0 : tpot;
  const double ts = std::isfinite(r.slo.ttft) && r.slo.ttft > 0 ? (mine.deadline - out.finish) / r.slo.ttft : kNever;
  const double tp =
      !prefill_only && std::isfinite(r.slo.tpot) && r.slo.tpot > 0 ? (r.slo.tpot - out.tpot) / r.slo.tpot : kNever;
  out.slack = std::min(ts, tp);
  return out;
}

bool better_placement(const SloPrediction& a, const SloPrediction& b) {
  if (a.loss != b.loss) return a.loss < b.loss;
  if (a.slack != b.slack) return a.slack > b.slack;
  if (a.finish != b.finish) return a.finish < b.finish;
  return a.cached > b.cached;
}

int choose_placement(const std::vector<SloPrediction>& preds, Time now, double margin) {
  int best = -1;
  for (size_t i = 0; i < preds.size(); ++i)
    if (best < 0 || better_placement(preds[i], preds[size_t(best)])) best = int(i);
  if (best < 0) return best;
  const SloPrediction& b = preds[size_t(best)];
  const double bound = now + (b.finish - now) * (1.0 + margin);
  int pick = best;
  for (size_t i = 0; i < preds.size(); ++i) {
    const SloPrediction& c = preds[i];
    if (c.loss != b.loss || c.finish > bound || (b.slack >= 0 && !(c.slack >= 0))) continue;
    const SloPrediction& cur = preds[size_t(pick)];
    if (c.outstanding < cur.outstanding || (c.outstanding == cur.outstanding && better_placement(c, cur)))
      pick = int(i);
  }
  return pick;
}

SloPredictPolicy::SloPredictPolicy(SloPredictParams p) : p_(std::move(p)), mapper_(p_.mapper) {
  p_.validate();
  waiting_first_.assign(size_t(mapper_.config().levels()), 0);
}

ParamMap SloPredictPolicy::params() const { return write_params(p_); }

Slo SloPredictPolicy::planning_slo(const Request& r) const {
  Slo slo = r.slo;
  if (!p_.map_priority || std::isfinite(slo.ttft) || std::isfinite(slo.tpot)) return slo;
  const int prio = std::clamp(r.priority, 0, mapper_.config().levels() - 1);
  bool higher = false;
  for (int i = 0; i < prio; ++i) higher = higher || waiting_first_[size_t(i)] > 0;
  const auto [ttft, tpot] = mapper_.map(prio, higher);  // HFX Alg. 2
  slo.ttft = ttft;
  slo.tpot = tpot;
  return slo;
}

std::vector<Assignment> SloPredictPolicy::poll(Time now, const std::vector<InstanceView>& views) {
  placed_.clear();
  return PushPolicy::poll(now, views);
}

int SloPredictPolicy::choose(const Request& r, Time now, const std::vector<InstanceView>& views) {
  Request planned = r;
  planned.slo = planning_slo(r);
  PromptChains chains(r);
  static const std::vector<PendingPrefill> kNone;
  std::vector<SloPrediction> preds;
  std::vector<int> index;
  for (size_t i = 0; i < views.size(); ++i) {
    const InstanceView& v = views[i];
    if (!v.accepting) continue;
    const Tokens cached = r.prefix.empty() ? 0 : v.cached_prefix_tokens(chains.get(v.block_size));
    auto it = placed_.find(v.id);
    preds.push_back(predict_slo(p_, v, planned, cached, now, it == placed_.end() ? kNone : it->second));
    index.push_back(int(i));
  }
  const int k = choose_placement(preds, now, p_.margin);
  if (k < 0) return -1;
  const int pick = index[size_t(k)];
  const SloPrediction& best = preds[size_t(k)];
  const InstanceView& v = views[size_t(pick)];
  const Tokens own = std::max<Tokens>(1, r.prompt_len - best.cached);
  placed_[v.id].push_back({due(planned, 1), own, v.model.prefill_cost(own, best.cached), r.prompt_len});
  const int prio = std::clamp(r.priority, 0, mapper_.config().levels() - 1);
  auto [t, fresh] = track_.try_emplace(r.id);
  if (!fresh && t->second.first < 0) --waiting_first_[size_t(t->second.priority)];  // a retry
  t->second = Track{prio, r.arrival, -1.0, 0};
  ++waiting_first_[size_t(prio)];
  return pick;
}

void SloPredictPolicy::first_token(Id request, Time now) {
  auto it = track_.find(request);
  if (it == track_.end() || it->second.first >= 0) return;
  it->second.first = now;
  --waiting_first_[size_t(it->second.priority)];
}

void SloPredictPolicy::on_cancelled(Id request, Time now) {
  PushPolicy::on_cancelled(request, now);
  auto it = track_.find(request);
  if (it == track_.end()) return;
  if (it->second.first < 0) --waiting_first_[size_t(it->second.priority)];
  track_.erase(it);
}

void SloPredictPolicy::on_token(Id request, Id, Tokens generated, Time now) {
  auto it = track_.find(request);
  if (it == track_.end()) return;
  it->second.generated = generated;
  if (generated == 1) first_token(request, now);
}

void SloPredictPolicy::on_finished(Id request, Id, Time now) {
  auto it = track_.find(request);
  if (it == track_.end()) return;
  const Track& t = it->second;
  if (t.first < 0) {
    --waiting_first_[size_t(t.priority)];
  } else if (t.generated > 1) {  // a completed request feeds the mapper's windows (Alg. 2)
    mapper_.record(t.priority, std::max(0.0, t.first - t.arrival), 0.0, (now - t.first) / double(t.generated - 1));
  }
  track_.erase(it);
}

}  // namespace slocore::stack
