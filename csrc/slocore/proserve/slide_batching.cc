// ProServe SlideBatching, ProServe Alg. 1 (see slide_batching.h).
#include "slocore/proserve/slide_batching.h"

#include <algorithm>
#include <cmath>
#include <cstring>
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

// Lines 16-17 for a prefill: GETMAXCHUNK of the time left in the batch (one eta's worth, at
// least a token, when nothing is planned yet: progress), its cost added to t_batch.
void add_prefill_chunk(PlanBuilder& b, const LatencyModel& m, const RequestState& s, bool running, double limit,
                       double eta, double& t_batch) {
  Tokens k = max_chunk(m, s, limit - t_batch);
  if (k == 0 && b.planned_count() == 0) k = std::max<Tokens>(max_chunk(m, s, eta), 1);  // progress
  if (k == 0) return;
  const Tokens got = b.add(s, running, k, true);
  if (got > 0) t_batch += m.prefill_cost(got, s.computed);
}

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

namespace {

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

bool same_model(const LatencyModel& m, const LatencyCoeffs& c, double correction) {
  const LatencyCoeffs& k = m.coeffs();
  return same_bits(m.correction(), correction) && same_bits(k.t_c, c.t_c) && same_bits(k.a_p, c.a_p) &&
         same_bits(k.b_p, c.b_p) && same_bits(k.c_p, c.c_p) && same_bits(k.a_d, c.a_d) && same_bits(k.b_d, c.b_d);
}

}  // namespace

// Alg. 1 reads every request's metrics each call (lines 2-6). With an engine's views (an
// epoch; the event contract of batch_scheduler.h) a waiting request's metrics are kept from
// when it joined the queue (they hold while it waits and the model's coefficients and
// correction are bit-for-bit the same), with the queue's exec in position order, its
// deadlines in order and its requests by density; per call the running requests are read,
// the exec sum is added up in queue order (the same doubles in the same order: the sum of
// line 6), and while every waiting request is URGENT (a burst: all late) line 13's order is
// walked only as far as the batch reaches. The full pass otherwise: phi_c, a waiting
// request that is not a prefill or whose prefix the engine may find cached, NaN keys, a
// NORMAL waiting request, a changed model (then the kept queue is rebuilt).
BatchPlan SlideBatchingScheduler::schedule(const InstanceView& v, Time now) {
  const bool follows = calls_.next(v);
  if (v.epoch == 0 || never_kept_ || p_.phi == Phi::Conservative) {
    synced_ = false;
  } else if (!(synced_ && follows && same_model(v.model, model_coeffs_, model_correction_) && sync(v))) {
    rebuild(v);
  }
  BatchPlan plan;
  if (!synced_ || !plan_kept(v, now, plan)) plan = schedule_full(v, now);
  if (synced_) {
    last_running_.clear();
    for (const RequestState& s : v.running) last_running_.push_back(s.request.id);
  }
  return plan;
}

void SlideBatchingScheduler::on_finished(Id request, Time) {
  const Kept* k = kept_.find(request);
  if (!k) return;
  if (synced_ && !k->running) {
    remove_waiting(request, *k);
    --waiting_known_;
  }
  kept_.erase(request);
}

// Lines 2-5 of a waiting request; false when it cannot be kept (see schedule()).
bool SlideBatchingScheduler::wait_metrics(const InstanceView& v, const RequestState& s, Kept& k) const {
  const LatencyModel& m = v.model;
  if (!s.in_prefill() || (v.prefix_cache && !s.request.prefix.empty())) return false;
  k.exec = std::max(m.prefill_cost(s.to_compute(), s.computed), 1e-12);
  const Tokens next = next_token(s);
  k.deadline = token_deadline(s.request, next);
  k.density = token_weight(s.request, next, p_.weights) / k.exec;
  return !std::isnan(k.deadline) && !std::isnan(k.density);
}

void SlideBatchingScheduler::add_waiting(Id id, Kept& k) {
  positions_.add(k.seq);
  exec_at_.resize(positions_.slots(), 0.0);
  by_density_.insert(DensityKey{k.density, k.seq, id, k.deadline});
  by_deadline_.insert(DeadlineKey{k.deadline, k.seq, id, k.density});
  exec_at_[positions_.slot(k.seq)] = k.exec;  // > 0
  k.running = false;
}

void SlideBatchingScheduler::remove_waiting(Id id, const Kept& k) {
  by_density_.erase(DensityKey{k.density, k.seq, id, k.deadline});
  by_deadline_.erase(DeadlineKey{k.deadline, k.seq, id, k.density});
  exec_at_[positions_.slot(k.seq)] = 0.0;
  positions_.remove(k.seq);
}

// The kept queue from the whole view.
void SlideBatchingScheduler::rebuild(const InstanceView& v) {
  synced_ = false;
  kept_.clear();
  by_density_.clear();
  by_deadline_.clear();
  const int64_t n = int64_t(v.waiting.size());
  positions_.reset(n);
  exec_at_.assign(positions_.slots(), 0.0);
  for (const RequestState& s : v.running)
    if (!kept_.emplace(s.request.id, Kept{0.0, 0.0, 0.0, 0, true})) return;  // an id twice
  for (int64_t i = 0; i < n; ++i) {
    const RequestState& s = v.waiting[size_t(i)];
    Kept k;
    if (!wait_metrics(v, s, k)) {
      never_kept_ = true;
      return;
    }
    k.seq = i;
    Kept* fresh = kept_.emplace(s.request.id, k);
    if (!fresh) return;
    add_waiting(s.request.id, *fresh);
  }
  model_coeffs_ = v.model.coeffs();
  model_correction_ = v.model.correction();
  waiting_known_ = size_t(n);
  synced_ = true;
}

// From the last call's view to this one (batch/kept_order.h); false when the view is not
// such a change (checked where it is cheap: running, the queue's front and its new tail).
bool SlideBatchingScheduler::sync(const InstanceView& v) {
  auto admit = [&](Id id, Kept& k) {
    remove_waiting(id, k);
    k.running = true;
    --waiting_known_;
  };
  if (!follow_running(v, kept_, last_running_, admit, preempted_)) return false;
  int64_t first = 0;
  if (!positions_.take_front(preempted_.size(), first)) return false;  // rebuild
  for (size_t j = 0; j < preempted_.size(); ++j) {                     // the queue's new front, in running order
    Kept& k = kept_.at(preempted_[j]);
    if (!wait_metrics(v, v.waiting[j], k)) return false;
    k.seq = first + int64_t(j);
    add_waiting(preempted_[j], k);
  }
  waiting_known_ += preempted_.size();
  if (v.waiting.size() < waiting_known_) return false;
  for (size_t j = waiting_known_; j < v.waiting.size(); ++j) {  // arrivals
    const RequestState& s = v.waiting[j];
    Kept k;
    if (!wait_metrics(v, s, k)) return false;
    k.seq = positions_.take_back();
    Kept* fresh = kept_.emplace(s.request.id, k);
    if (!fresh) return false;
    add_waiting(s.request.id, *fresh);
    ++waiting_known_;
  }
  return true;
}

// schedule_full's lines 6-18 over the kept queue; false (nothing planned that counts) when
// the full pass must decide (a running request's NaN key, a NORMAL waiting request).
bool SlideBatchingScheduler::plan_kept(const InstanceView& v, Time now, BatchPlan& plan) {
  const LatencyModel& m = v.model;
  const size_t nr = v.running.size(), n = v.num_requests();
  running_.clear();
  double t_min = kNever, sum_exec = 0.0;
  for (size_t i = 0; i < nr; ++i) {  // lines 2-6, as slide_candidates
    const RequestState& s = v.running[i];
    SlideCandidate c{{&s, true, i}};
    c.exec = std::max(s.in_prefill() ? m.prefill_cost(s.to_compute(), s.computed) : m.decode_cost(s.computed), 1e-12);
    const Tokens next = next_token(s);
    c.remain = token_deadline(s.request, next) - now;
    c.density = token_weight(s.request, next, p_.weights) / c.exec;
    if (std::isnan(c.remain) || std::isnan(c.density)) return false;
    if (c.remain > 0) t_min = std::min(t_min, c.remain);
    sum_exec += c.exec;
    running_.push_back(c);
  }
  if (waiting_known_ > 0) {
    // Line 6's sum goes on in queue order; a slot without a request adds +0.0 (exact).
    for (size_t i = positions_.slot(positions_.front()); i < positions_.slot(positions_.back()); ++i)
      sum_exec += exec_at_[i];
    // The least positive remaining time: remain = deadline - now is monotone in the deadline.
    auto up = by_deadline_.upper_bound(DeadlineKey{now, std::numeric_limits<int64_t>::max(), 0, 0.0});
    if (up != by_deadline_.end()) t_min = std::min(t_min, up->deadline - now);
  }
  const double budget = std::max(t_min, p_.eta);  // line 7
  const double tc = m.overhead();
  const double steps = budget > tc ? budget / (budget - tc) : kNever;
  const double phi = p_.phi == Phi::Aggressive ? steps * sum_exec : sum_exec + double(n) * tc;
  auto urgent = [&](double remain) {
    return p_.order == SlideOrder::Density || (p_.order == SlideOrder::Slide && remain < p_.gamma * phi);
  };
  // The NORMAL waiting requests are the deadline order's tail (remain is monotone in it):
  // from a guess at the boundary, stepped to the first one that is not URGENT.
  auto normal_from = [&](double d) {
    auto it = by_deadline_.lower_bound(DeadlineKey{d, std::numeric_limits<int64_t>::min(), 0, 0.0});
    while (it != by_deadline_.begin() && !urgent(std::prev(it)->deadline - now)) --it;
    while (it != by_deadline_.end() && urgent(it->deadline - now)) ++it;
    return it;
  };
  const auto normal_begin = normal_from(p_.gamma * phi + now);
  size_t normal_waiting = 0;
  for (auto it = normal_begin; it != by_deadline_.end(); ++it) ++normal_waiting;
  urgent_ = waiting_known_ - normal_waiting;
  for (SlideCandidate& c : running_) urgent_ += (c.urgent = urgent(c.remain));
  normal_ = n - urgent_;
  std::sort(running_.begin(), running_.end(), slide_before);
  std::vector<size_t> victims;  // the running requests in line 13's order, the back evicted first
  for (const SlideCandidate& c : running_) victims.push_back(c.index);

  const double limit = p_.latency_aware ? budget : kNever;
  PlanBuilder b(v, p_.latency_aware ? v.max_batch_tokens : p_.token_budget);
  const LatencyCoeffs& co = m.coeffs();
  const bool monotone = m.correction() > 0 && co.a_p >= 0 && co.b_p >= 0 && co.c_p >= 0;
  const double one_token = m.prefill_cost(1, 0);
  double t_batch = m.overhead();  // line 14
  auto full = [&] { return (b.planned_count() > 0 && t_batch >= limit) || b.seq_full() || b.budget_left() <= 0; };
  // Line 13's order: the running requests (sorted) merged with the waiting ones, URGENT by
  // density (skipping the NORMAL ones there), then NORMAL by deadline.
  auto wit = by_density_.begin();
  auto nit = normal_begin;
  auto skip_normal = [&] {
    while (wit != by_density_.end() && !urgent(wit->deadline - now)) ++wit;
  };
  skip_normal();
  // A waiting candidate (the head of its stream), or false at the end of both.
  auto head = [&](SlideCandidate& w, Id& id, int64_t& seq) {
    if (wit != by_density_.end()) {
      w.urgent = true, w.density = wit->density, w.remain = wit->deadline - now, id = wit->id, seq = wit->seq;
      return true;
    }
    if (nit != by_deadline_.end()) {
      w.urgent = false, w.density = nit->density, w.remain = nit->deadline - now, id = nit->id, seq = nit->seq;
      return true;
    }
    return false;
  };
  auto run_first = [](const SlideCandidate& r, const SlideCandidate& w) {
    if (r.urgent != w.urgent) return r.urgent;
    return r.urgent ? (r.density != w.density ? r.density > w.density : true)
                    : (r.remain != w.remain ? r.remain < w.remain : true);
  };
  const size_t nr_ = nr;
  size_t ri = 0, j = 0;
  SlideCandidate prev{}, c{}, w{};
  Id wid = 0;
  int64_t wseq = 0;
  for (;;) {  // lines 15-18
    const bool have_w = head(w, wid, wseq);
    if (ri == nr_ && !have_w) break;
    if (full()) break;
    if (monotone && j > 0 && b.planned_count() > 0 && one_token > limit - t_batch) {
      decodes_.clear();  // the waiting requests are prefills: the running decodes after prev
      for (const SlideCandidate& d : running_)
        if (!d.s->in_prefill() && slide_before(prev, d)) decodes_.push_back(d);
      for (const SlideCandidate& d : decodes_) {
        if (full()) break;
        if (b.planned(d.s->request.id)) continue;
        const size_t before = b.planned_count();
        run_with_preemption(b, d.index, victims);
        if (b.planned_count() > before && b.planned(d.s->request.id)) t_batch += d.exec;
      }
      break;
    }
    const bool take_run = ri < nr_ && (!have_w || run_first(running_[ri], w));
    if (!take_run && b.blocks_left() <= 0) {  // no KV: every waiting request up to the next running one is a no-op
      if (ri == nr_) break;
      const SlideCandidate& r = running_[ri];
      if (r.urgent) {
        wit = by_density_.lower_bound(DensityKey{r.density, std::numeric_limits<int64_t>::min(), 0, 0.0});
        skip_normal();
      } else {
        wit = by_density_.end();
        while (nit != by_deadline_.end() && nit->deadline - now < r.remain) ++nit;
      }
      ++j;
      continue;
    }
    if (take_run) {
      c = running_[ri++];
    } else {
      // Two NORMAL waiting requests with different deadlines but one remaining time: their
      // order is their positions, not the deadline order (the full pass decides).
      if (!w.urgent && std::next(nit) != by_deadline_.end() && std::next(nit)->deadline - now == w.remain &&
          std::next(nit)->deadline != nit->deadline)
        return false;
      const size_t i = positions_.rank(wseq);
      if (i >= v.waiting.size() || v.waiting[i].request.id != wid) {
        synced_ = false;
        return false;
      }
      c = w;
      c.s = &v.waiting[i], c.running = false, c.index = i;
      c.exec = exec_at_[positions_.slot(wseq)];
      if (w.urgent) {
        ++wit;
        skip_normal();
      } else {
        ++nit;
      }
    }
    prev = c;
    ++j;
    const RequestState& s = *c.s;
    if (b.planned(s.request.id)) continue;
    if (!s.in_prefill()) {  // a running decode (atomic: GETMAXCHUNK is its exec)
      const size_t before = b.planned_count();
      run_with_preemption(b, c.index, victims);
      if (b.planned_count() > before && b.planned(s.request.id)) t_batch += c.exec;
      continue;
    }
    add_prefill_chunk(b, m, s, c.running, limit, p_.eta, t_batch);
  }
  ensure_progress(b);
  plan = b.take();
  return true;
}

BatchPlan SlideBatchingScheduler::schedule_full(const InstanceView& v, Time now) {
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
      run_with_preemption(b, c.index, victims);
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
    add_prefill_chunk(b, m, s, c.running, limit, p_.eta, t_batch);
  }
  ensure_progress(b);
  return b.take();
}

}  // namespace slocore::proserve
