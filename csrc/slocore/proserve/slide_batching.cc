// ProServe SlideBatching, ProServe Alg. 1 (see slide_batching.h).
#include "slocore/proserve/slide_batching.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "slocore/core/errors.h"

namespace slocore::proserve {

void SlideParams::validate() const { check_params(*this, "slide_batching"); }

ParamMap SlideBatchingScheduler::params() const { return write_params(p_); }

Tokens max_chunk(const LatencyModel& m, const RequestState& s, double time_left) {
  const Tokens n = s.to_compute();
  if (time_left <= 0 || n <= 0) return 0;
  if (m.prefill_cost(n, s.computed) <= time_left) return n;
  const LatencyCoeffs& c = m.coeffs();
  const double A = m.correction() * c.a_p, B = m.correction() * (c.b_p * double(s.computed) + c.c_p);
  double k = A > 0 ? (-B + std::sqrt(B * B + 4 * A * time_left)) / (2 * A) : (B > 0 ? time_left / B : double(n));
  Tokens q = std::clamp<Tokens>(Tokens(std::floor(k)), 0, n);
  while (q > 0 && m.prefill_cost(q, s.computed) > time_left) --q;  // float guard
  while (q < n && m.prefill_cost(q + 1, s.computed) <= time_left) ++q;
  return q;
}

namespace {

// Line 13's order with the stable sort's tie-break written out (position in the view: running
// ones first, then by index): a total order while no key is NaN, so a partial sort of it gives
// the same prefix as the stable sort.
bool slide_before(const SlideCandidate& a, const SlideCandidate& b) {
  if (a.urgent != b.urgent) return a.urgent;
  if (a.urgent ? a.density != b.density : a.remain != b.remain)
    return a.urgent ? a.density > b.density : a.remain < b.remain;
  if (a.running != b.running) return a.running;
  return a.index < b.index;
}

// Lines 1-12 into q (unsorted, in view order); true when a sort key is NaN.
bool slide_candidates(const InstanceView& v, Time now, const SlideParams& p, double* t_budget,
                      std::vector<SlideCandidate>& q) {
  const LatencyModel& m = v.model;
  q.clear();
  q.reserve(v.num_requests());
  bool nan_key = false;
  double t_min = kNever, sum_exec = 0.0;
  auto add = [&](const RequestState& s, bool running, size_t i) {  // lines 2-6
    SlideCandidate c{{&s, running, i}};
    c.exec = std::max(s.in_prefill() ? m.prefill_cost(s.to_compute(), s.computed) : m.decode_cost(s.computed), 1e-12);
    const Tokens next = next_token(s);
    c.remain = token_deadline(s.request, next) - now;
    c.density = token_weight(s.request, next, p.weights) / c.exec;
    // A token already late cannot be saved by a smaller batch; letting it set the budget (line 6
    // takes the min over every request) would pin t_budget at eta while any request is late.
    if (c.remain > 0) t_min = std::min(t_min, c.remain);
    nan_key = nan_key || std::isnan(c.remain) || std::isnan(c.density);
    sum_exec += c.exec;
    q.push_back(c);
  };
  for (size_t i = 0; i < v.running.size(); ++i) add(v.running[i], true, i);
  for (size_t i = 0; i < v.waiting.size(); ++i) add(v.waiting[i], false, i);
  const double budget = std::max(t_min, p.eta);  // line 7
  if (t_budget) *t_budget = budget;
  const double tc = m.overhead();
  const double steps = budget > tc ? budget / (budget - tc) : kNever;  // batches per unit of exec
  std::vector<double> phi(q.size(), 0.0);
  if (p.phi == Phi::Aggressive) {
    std::fill(phi.begin(), phi.end(), steps * sum_exec);  // Eq. 8
  } else if (p.phi == Phi::Prefill) {
    std::fill(phi.begin(), phi.end(), sum_exec + double(q.size()) * tc);  // phi_p
  } else {  // Eq. 9: prefix sums in ascending remaining time
    std::vector<size_t> idx(q.size());
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
    std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return q[a].remain < q[b].remain; });
    double acc = 0.0;
    for (size_t i : idx) phi[i] = steps * (acc += q[i].exec);
  }
  for (size_t i = 0; i < q.size(); ++i)  // lines 8-12
    q[i].urgent = p.order == SlideOrder::Density || (p.order == SlideOrder::Slide && q[i].remain < p.gamma * phi[i]);
  return nan_key;
}

void stable_order(std::vector<SlideCandidate>& q) {
  std::stable_sort(q.begin(), q.end(), [](const SlideCandidate& a, const SlideCandidate& b) {  // line 13
    if (a.urgent != b.urgent) return a.urgent;
    return a.urgent ? a.density > b.density : a.remain < b.remain;
  });
}

// q in line 13's order, sorted only as far as it is read: each extension partitions off the
// next (at least 64, doubling) best candidates and sorts them.
class LazyOrder {
 public:
  LazyOrder(std::vector<SlideCandidate>& q, bool sorted) : q_(q), done_(sorted ? q.size() : 0) {}
  const SlideCandidate& operator[](size_t j) {
    while (j >= done_) {
      const size_t k = std::min(q_.size(), std::max<size_t>(64, 2 * done_));
      const auto first = q_.begin() + std::ptrdiff_t(done_), mid = q_.begin() + std::ptrdiff_t(k);
      if (k < q_.size()) std::nth_element(first, mid, q_.end(), slide_before);
      std::sort(first, mid, slide_before);
      done_ = k;
    }
    return q_[j];
  }

 private:
  std::vector<SlideCandidate>& q_;
  size_t done_;
};

}  // namespace

std::vector<SlideCandidate> slide_order(const InstanceView& v, Time now, const SlideParams& p, double* t_budget) {
  std::vector<SlideCandidate> q;
  slide_candidates(v, now, p, t_budget, q);
  stable_order(q);
  return q;
}

BatchPlan SlideBatchingScheduler::schedule(const InstanceView& v, Time now) {
  double budget = 0.0;
  std::vector<SlideCandidate>& q = q_;
  const bool nan_key = slide_candidates(v, now, p_, &budget, q);
  urgent_ = size_t(std::count_if(q.begin(), q.end(), [](const SlideCandidate& c) { return c.urgent; }));
  normal_ = q.size() - urgent_;
  const LatencyModel& m = v.model;
  const double limit = p_.latency_aware ? budget : kNever;
  PlanBuilder b(v, p_.latency_aware ? v.max_batch_tokens : p_.token_budget);
  // Victims for KV shortage: running requests in line 13's order, the back (least preferred)
  // evicted first. The loop below usually stops long before the end of the order, so the
  // order is built as far as it reads (a NaN key: the stable sort of everything, as before).
  std::vector<size_t> victims;
  if (nan_key) {
    stable_order(q);
    for (const SlideCandidate& c : q)
      if (c.running) victims.push_back(c.index);
  } else {
    running_.clear();
    for (const SlideCandidate& c : q)
      if (c.running) running_.push_back(c);
    std::sort(running_.begin(), running_.end(), slide_before);
    for (const SlideCandidate& c : running_) victims.push_back(c.index);
  }
  LazyOrder order(q, nan_key);
  // Once something is planned and the time left is below the cheapest prefill token
  // (prefill_cost(1, 0): the cost only grows with the chunk and the context, coefficients
  // >= 0), GETMAXCHUNK gives every later prefill 0 tokens and the time left only shrinks: the
  // rest of the order is its decodes alone (`decodes`, in the same order).
  const LatencyCoeffs& co = m.coeffs();
  const bool monotone = m.correction() > 0 && co.a_p >= 0 && co.b_p >= 0 && co.c_p >= 0;
  const double one_token = m.prefill_cost(1, 0);
  double t_batch = m.overhead();  // line 14
  auto full = [&] { return (b.planned_count() > 0 && t_batch >= limit) || b.seq_full() || b.budget_left() <= 0; };
  auto decode_step = [&](const SlideCandidate& c) {  // a decode step is atomic: GETMAXCHUNK is its exec
    const RequestState& s = *c.s;
    const size_t before = b.planned_count();
    if (c.running)
      run_with_preemption(b, {c.index}, victims);
    else
      b.add(s, false, 1, false);
    if (b.planned_count() > before && b.planned(s.request.id)) t_batch += c.exec;
  };
  for (size_t j = 0; j < q.size(); ++j) {  // lines 15-18
    if (full()) break;
    if (!nan_key && monotone && j > 0 && b.planned_count() > 0 && one_token > limit - t_batch) {
      decodes_.clear();
      for (const SlideCandidate& c : q)
        if (!c.s->in_prefill() && slide_before(order[j - 1], c)) decodes_.push_back(c);
      std::sort(decodes_.begin(), decodes_.end(), slide_before);
      for (const SlideCandidate& c : decodes_) {
        if (full()) break;
        if (!b.planned(c.s->request.id)) decode_step(c);
      }
      break;
    }
    const SlideCandidate& c = order[j];
    const RequestState& s = *c.s;
    if (b.planned(s.request.id)) continue;
    if (!s.in_prefill()) {
      decode_step(c);
      continue;
    }
    Tokens k = max_chunk(m, s, limit - t_batch);
    if (k == 0 && b.planned_count() == 0) k = std::max<Tokens>(max_chunk(m, s, p_.eta), 1);  // progress
    if (k == 0) continue;
    const Tokens got = b.add(s, c.running, k, true);
    if (got > 0) t_batch += m.prefill_cost(got, s.computed);
  }
  ensure_progress(b);
  return b.take();
}

}  // namespace slocore::proserve
