// The slocore stack's dispatch policy (see stack/slo_predict.h).
#include "slocore/stack/slo_predict.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

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
  out.saved = m.prefill_cost(r.prompt_len, 0) - mine.cost;
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

namespace {
bool entry_before(Time d, int64_t seq, Time ed, int64_t eseq) { return d < ed || (d == ed && seq < eseq); }
constexpr int64_t kRunningSeq = std::numeric_limits<int64_t>::min();  // + position in `running`
}  // namespace

bool PendingQueue::before(const Entry& a, const Entry& b) const {
  return order_ == QueueOrder::Deadline ? entry_before(a.p.deadline, a.seq, b.p.deadline, b.seq) : a.seq < b.seq;
}

void PendingQueue::read_running(const InstanceView& v, std::vector<Entry>& prefills) {
  const LatencyModel& m = v.model;
  per_iter_ = m.overhead();  // as predict_slo: per_iter and tpot add the same decodes in the same order
  int64_t at = kRunningSeq;
  for (const RequestState& s : v.running) {
    if (s.in_prefill())
      prefills.push_back(Entry{pending_of(m, s), at, s.request.id, s.computed, Kind::Running, false});
    else if (!prefill_only_)
      per_iter_ += m.decode_cost(s.context_len());
    ++at;
  }
}

PendingQueue::Entry PendingQueue::waiting_entry(const LatencyModel& m, const RequestState& s, int64_t seq) {
  return Entry{pending_of(m, s), seq, s.request.id, s.computed, Kind::Waiting, false};
}

bool PendingQueue::add(const Entry& x) {
  if (std::isnan(x.p.deadline)) return false;
  auto at = q_.end();
  if (order_ == QueueOrder::Deadline)  // after equal deadlines: every entry here is earlier in queue order
    at = std::upper_bound(q_.begin(), q_.end(), x.p.deadline, [](Time d, const Entry& e) { return d < e.p.deadline; });
  valid_ = std::min(valid_, size_t(at - q_.begin()));
  q_.insert(at, x);
  return true;
}

void PendingQueue::drop_extras() {
  if (extras_ > 0) {
    size_t from = q_.size() - extras_;  // fifo: the placements are the tail
    if (order_ == QueueOrder::Deadline)
      for (const Key& key : extra_keys_) {  // the first placement in the sorted queue
        auto at = std::lower_bound(q_.begin(), q_.end(), key, [](const Entry& e, const Key& k) {
          return entry_before(e.p.deadline, e.seq, k.deadline, k.seq);
        });
        from = std::min(from, size_t(at - q_.begin()));
      }
    valid_ = std::min(valid_, from);
    q_.erase(
        std::remove_if(q_.begin() + ptrdiff_t(from), q_.end(), [](const Entry& e) { return e.kind == Kind::Placed; }),
        q_.end());
  }
  extras_ = 0;
  extra_keys_.clear();
  first_extra_seq_ = next_seq_;
  tpot_ = tpot_base_;
}

void PendingQueue::rebuild(const SloPredictParams& p, const InstanceView& v, const std::vector<PendingPrefill>& extra) {
  const LatencyModel& m = v.model;
  order_ = p.order;
  prefill_only_ = v.role == Role::Prefill;
  epoch_ = v.epoch;
  stream_ = v.waiting_log.stream;
  logged_ = v.waiting_log.events.size();
  coeffs_ = m.coeffs();
  beta_ = m.correction();
  q_.clear();
  slots_.clear();
  where_.clear();
  extra_keys_.clear();
  valid_ = 0;
  read_running(v, q_);
  next_seq_ = front_seq_ = 0;
  for (const RequestState& s : v.waiting) {
    const Entry e = waiting_entry(m, s, next_seq_++);
    q_.push_back(e);
    slots_.push_back({e.seq, e.p.context, m.decode_cost(e.p.context), false});
    if (!where_.emplace(e.id, {e.p.deadline, e.seq})) stream_ = 0;  // an id twice: not followed
  }
  waiting_ = v.waiting.size();
  tpot_base_ = per_iter_;
  if (!prefill_only_)
    for (const Entry& e : q_) tpot_base_ += m.decode_cost(e.p.context);
  first_extra_seq_ = next_seq_;
  for (const PendingPrefill& x : extra) {
    extra_keys_.push_back({x.deadline, next_seq_});
    q_.push_back(Entry{x, next_seq_++});
  }
  extras_ = extra.size();
  tpot_ = tpot_base_;
  if (!prefill_only_)
    for (const PendingPrefill& x : extra) tpot_ += m.decode_cost(x.context);
  for (const Entry& e : q_)
    if (std::isnan(e.p.deadline)) epoch_ = 0;
  if (order_ == QueueOrder::Deadline && epoch_ != 0 &&
      !std::is_sorted(q_.begin(), q_.end(), [](const Entry& a, const Entry& b) { return a.p.deadline < b.p.deadline; }))
    std::stable_sort(q_.begin(), q_.end(), [](const Entry& a, const Entry& b) { return a.p.deadline < b.p.deadline; });
}

// The view after the engine's steps since the last sync, from its waiting log: O(queue) over
// the kept entries, reading only the running requests and the waiting ones that came in.
bool PendingQueue::follow(const InstanceView& v, bool same_model) {
  const WaitingLog& log = v.waiting_log;
  if (stream_ == 0 || log.stream != stream_ || log.events.size() < logged_) return false;
  const LatencyModel& m = v.model;
  // Who left, who was put back at the front (those that came and left since were never kept).
  gone_.clear();
  front_.clear();
  for (size_t i = logged_; i < log.events.size(); ++i) {
    const WaitingLog::Event& e = log.events[i];
    if (e.kind == WaitingLog::Kind::Prepended) {
      front_.push_back(e.id);
    } else if (const Key* k = where_.find(e.id)) {
      gone_.push_back(*k);
      where_.erase(e.id);
    } else if (auto f = std::find(front_.begin(), front_.end(), e.id); f != front_.end()) {
      front_.erase(f);
    }
  }
  logged_ = log.events.size();
  const size_t n = v.waiting.size(), k = front_.size();
  if (where_.size() + k > n) return false;
  const size_t appended = n - where_.size() - k;
  // Out of the sorted queue: those that left, the running requests (read again) and this poll's
  // placements (the caller adds them back).
  for (const Key& key : gone_) {
    const Entry probe{{key.deadline, 0, 0.0, 0}, key.seq};
    auto at =
        std::lower_bound(q_.begin(), q_.end(), probe, [&](const Entry& a, const Entry& b) { return before(a, b); });
    if (at == q_.end() || at->seq != key.seq) return false;
    at->left = true;
  }
  auto leaves = [](const Entry& e) { return e.left || e.kind != Kind::Waiting; };
  auto first = std::find_if(q_.begin(), q_.end(), leaves);
  valid_ = std::min(valid_, size_t(first - q_.begin()));
  q_.erase(std::remove_if(first, q_.end(), leaves), q_.end());
  extras_ = 0;
  extra_keys_.clear();
  // The decode sum's queue order likewise.
  for (const Key& key : gone_) {
    auto at =
        std::lower_bound(slots_.begin(), slots_.end(), key.seq, [](const Slot& x, int64_t s) { return x.seq < s; });
    if (at == slots_.end() || at->seq != key.seq) return false;
    at->left = true;
  }
  if (!gone_.empty())
    slots_.erase(std::remove_if(slots_.begin(), slots_.end(), [](const Slot& x) { return x.left; }), slots_.end());
  // A new model: the kept costs again (the deadlines, so the order, stay).
  if (!same_model) {
    coeffs_ = m.coeffs();
    beta_ = m.correction();
    for (Entry& e : q_) e.p.cost = m.prefill_cost(e.p.tokens, e.computed);
    for (Slot& x : slots_) x.decode = m.decode_cost(x.context);
    valid_ = 0;
  }
  // In: the running prefills (and the decodes' sum), the front, the appended.
  fresh_.clear();
  read_running(v, fresh_);
  const size_t running = fresh_.size();
  std::vector<Slot> front;
  auto come_in = [&](size_t j, int64_t seq, std::vector<Slot>& slots) {
    const Entry e = waiting_entry(m, v.waiting[j], seq);
    if (std::isnan(e.p.deadline) || !where_.emplace(e.id, {e.p.deadline, seq})) return false;
    fresh_.push_back(e);
    slots.push_back({seq, e.p.context, m.decode_cost(e.p.context), false});
    return true;
  };
  front_seq_ -= int64_t(k);
  for (size_t j = 0; j < k; ++j)
    if (!come_in(j, front_seq_ + int64_t(j), front)) return false;
  for (size_t j = n - appended; j < n; ++j)
    if (!come_in(j, next_seq_++, slots_)) return false;
  slots_.insert(slots_.begin(), front.begin(), front.end());
  for (size_t i = 0; i < running; ++i)
    if (std::isnan(fresh_[i].p.deadline)) return false;
  // The decode sum in predict_slo's order: the running prefills, then the waiting queue.
  tpot_base_ = per_iter_;
  if (!prefill_only_) {
    for (size_t i = 0; i < running; ++i) tpot_base_ += m.decode_cost(fresh_[i].p.context);
    for (const Slot& x : slots_) tpot_base_ += x.decode;
  }
  auto by_order = [&](const Entry& a, const Entry& b) { return before(a, b); };
  std::sort(fresh_.begin(), fresh_.end(), by_order);
  if (!fresh_.empty()) {
    const size_t old = q_.size();
    valid_ = std::min(valid_, size_t(std::upper_bound(q_.begin(), q_.end(), fresh_.front(), by_order) - q_.begin()));
    q_.insert(q_.end(), fresh_.begin(), fresh_.end());
    std::inplace_merge(q_.begin(), q_.begin() + ptrdiff_t(old), q_.end(), by_order);
  }
  epoch_ = v.epoch;
  waiting_ = n;
  first_extra_seq_ = next_seq_;
  tpot_ = tpot_base_;
  return true;
}

bool PendingQueue::sync(const SloPredictParams& p, const InstanceView& v, const std::vector<PendingPrefill>& extra,
                        uint64_t poll) {
  if (v.epoch == 0) return false;
  const LatencyCoeffs& c = v.model.coeffs();
  const bool same_setup = p.order == order_ && (v.role == Role::Prefill) == prefill_only_ && epoch_ != 0;
  const bool same_model = v.model.correction() == beta_ && c.t_c == coeffs_.t_c && c.a_p == coeffs_.a_p &&
                          c.b_p == coeffs_.b_p && c.c_p == coeffs_.c_p && c.a_d == coeffs_.a_d && c.b_d == coeffs_.b_d;
  const bool followed = v.epoch != epoch_ && same_setup && follow(v, same_model);
  if (!followed && (v.epoch != epoch_ || !same_setup || !same_model || v.waiting.size() < waiting_)) {
    rebuild(p, v, extra);
    poll_ = poll;
    return epoch_ != 0;
  }
  const LatencyModel& m = v.model;
  if (poll != poll_ || v.waiting.size() > waiting_ || extra.size() < extras_) drop_extras();
  poll_ = poll;
  for (size_t i = waiting_; i < v.waiting.size(); ++i) {  // appended: after every waiting request
    const Entry e = waiting_entry(m, v.waiting[i], next_seq_++);
    if (!add(e)) return (epoch_ = 0) != 0;
    slots_.push_back({e.seq, e.p.context, m.decode_cost(e.p.context), false});
    if (!where_.emplace(e.id, {e.p.deadline, e.seq})) stream_ = 0;
    if (!prefill_only_) tpot_base_ += slots_.back().decode;
  }
  if (waiting_ != v.waiting.size()) {
    waiting_ = v.waiting.size();
    first_extra_seq_ = next_seq_;
    tpot_ = tpot_base_;
  }
  for (size_t i = extras_; i < extra.size(); ++i) {  // this poll's placements: after the waiting ones
    extra_keys_.push_back({extra[i].deadline, next_seq_});
    if (!add(Entry{extra[i], next_seq_++})) return (epoch_ = 0) != 0;
    if (!prefill_only_) tpot_ += m.decode_cost(extra[i].context);
  }
  extras_ = extra.size();
  return true;
}

void PendingQueue::fold_to(size_t n) {
  if (cost_.size() < q_.size()) cost_.resize(q_.size()), tokens_.resize(q_.size());
  if (first_negative_ >= valid_) first_negative_ = kNone;  // forget what lay past the valid folds
  for (size_t i = valid_; i < n; ++i) {
    const PendingPrefill& x = q_[i].p;
    cost_[i] = (i ? cost_[i - 1] : 0.0) + x.cost;
    tokens_[i] = (i ? tokens_[i - 1] : 0) + x.tokens;
    if (!(x.cost >= 0) || x.tokens < 0) first_negative_ = std::min(first_negative_, i);
  }
  valid_ = std::max(valid_, n);
}

SloPrediction PendingQueue::predict(const InstanceView& v, const Request& r, Tokens cached, Time now) {
  const LatencyModel& m = v.model;
  const Tokens own = std::max<Tokens>(1, r.prompt_len - cached);
  const PendingPrefill mine{due(r, 1), own, m.prefill_cost(own, cached), r.prompt_len};
  const double tpot = prefill_only_ ? 0.0 : tpot_ + m.decode_cost(mine.context);
  size_t pos = q_.size();
  if (order_ == QueueOrder::Deadline)
    pos = size_t(
        std::upper_bound(q_.begin(), q_.end(), mine.deadline, [](Time d, const Entry& x) { return d < x.p.deadline; }) -
        q_.begin());
  fold_to(q_.size());
  const Tokens budget = std::max<Tokens>(1, v.max_batch_tokens);
  const double start = std::max(0.0, v.busy_until - now);
  const double per_iter = per_iter_;
  auto finish = [&](double cost, Tokens tokens) {
    return now + (start + cost + double((tokens + budget - 1) / budget) * per_iter);
  };
  SloPrediction out;
  out.cached = cached;
  out.saved = m.prefill_cost(r.prompt_len, 0) - mine.cost;
  out.outstanding = int64_t(v.num_requests() + extras_);
  double cost = pos ? cost_[pos - 1] : 0.0;
  Tokens tokens = pos ? tokens_[pos - 1] : 0;
  out.finish = finish(cost + mine.cost, tokens + mine.tokens);
  if (out.finish > mine.deadline) out.loss += 1;
  // Behind r: on time without r, late with it? An entry due at +inf is never late (nor any after it).
  // With no negative cost, finish() only grows along the queue, so the deadlines (ascending) bound
  // the entries to check: one due before the entry at pos finishes without r is late without r,
  // and one due when the whole queue and r have finished is on time with r (the same sums).
  size_t lo = pos, hi = q_.size();
  if (pos < q_.size() && first_negative_ == kNone && per_iter >= 0 && mine.cost >= 0 && mine.tokens >= 0) {
    auto by_deadline = [](const Entry& e, double t) { return e.p.deadline < t; };
    const auto first = q_.begin() + ptrdiff_t(pos);
    lo = size_t(std::lower_bound(first, q_.end(), finish(cost_[pos], tokens_[pos]), by_deadline) - q_.begin());
    const size_t last = q_.size() - 1;
    const double all = finish(cost_[last] + mine.cost, tokens_[last] + mine.tokens);
    hi = size_t(std::lower_bound(first, q_.end(), all, by_deadline) - q_.begin());
  }
  for (size_t i = lo; i < hi && q_[i].p.deadline < kNever; ++i) {
    cost = cost_[i];
    tokens = tokens_[i];
    const bool late_without = finish(cost, tokens) > q_[i].p.deadline;
    const bool late_with = finish(cost + mine.cost, tokens + mine.tokens) > q_[i].p.deadline;
    if (late_with && !late_without) out.loss += 1;
  }
  out.ttft = out.finish - r.arrival;
  out.tpot = tpot;
  const double ts = std::isfinite(r.slo.ttft) && r.slo.ttft > 0 ? (mine.deadline - out.finish) / r.slo.ttft : kNever;
  const double tp =
      !prefill_only_ && std::isfinite(r.slo.tpot) && r.slo.tpot > 0 ? (r.slo.tpot - out.tpot) / r.slo.tpot : kNever;
  out.slack = std::min(ts, tp);
  return out;
}

namespace {
bool same_bits(const SloPrediction& a, const SloPrediction& b) {
  auto eq = [](double x, double y) { return std::memcmp(&x, &y, sizeof x) == 0; };
  return eq(a.ttft, b.ttft) && eq(a.tpot, b.tpot) && a.loss == b.loss && eq(a.slack, b.slack) &&
         eq(a.finish, b.finish) && a.cached == b.cached && eq(a.saved, b.saved) && a.outstanding == b.outstanding;
}
}  // namespace

bool better_placement(const SloPrediction& a, const SloPrediction& b) {
  if (a.loss != b.loss) return a.loss < b.loss;
  if (a.slack != b.slack) return a.slack > b.slack;
  if (a.finish != b.finish) return a.finish < b.finish;
  return a.cached > b.cached;
}

int choose_placement(const std::vector<SloPrediction>& preds, Time now, double margin, bool slack_for_cache) {
  int best = -1;
  for (size_t i = 0; i < preds.size(); ++i)
    if (best < 0 || better_placement(preds[i], preds[size_t(best)])) best = int(i);
  if (best < 0) return best;
  const SloPrediction& b = preds[size_t(best)];
  const double bound = now + (b.finish - now) * (1.0 + margin);
  int pick = best;
  for (size_t i = 0; i < preds.size(); ++i) {
    const SloPrediction& c = preds[i];
    const bool equal = c.finish <= bound || (slack_for_cache && c.saved > b.saved && c.slack >= margin);
    if (c.loss != b.loss || !equal || (b.slack >= 0 && !(c.slack >= 0))) continue;
    const SloPrediction& cur = preds[size_t(pick)];
    if (c.saved != cur.saved
            ? c.saved > cur.saved
            : c.outstanding < cur.outstanding || (c.outstanding == cur.outstanding && better_placement(c, cur)))
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

void SloPredictPolicy::submit(const Request& r, Time now, Time expected_handoff) {
  if (!p_.hold) return PushPolicy::submit(r, now, expected_handoff);
  Request planned = r;
  planned.slo = planning_slo(r);
  const HeldKey key{due(planned, 1), held_seq_++};
  held_at_[r.id] = key;
  held_.emplace(key, r);
}

std::vector<Assignment> SloPredictPolicy::poll(Time now, const std::vector<InstanceView>& views) {
  placed_.clear();
  ++poll_;
  std::vector<Assignment> out = PushPolicy::poll(now, views);
  if (p_.hold) {
    std::vector<Assignment> held = poll_held(now, views);
    out.insert(out.end(), held.begin(), held.end());
  }
  return out;
}

double held_room(const InstanceView& v, const std::vector<PendingPrefill>& extra, Time now) {
  const LatencyModel& m = v.model;
  const Tokens budget = std::max<Tokens>(1, v.max_batch_tokens);
  // One pass over the running requests: their decodes join both the full iteration and every
  // iteration of the backlog; their remaining prefills join the backlog.
  double iteration = m.overhead() + m.prefill_cost(budget, 0), per_iter = m.overhead(), cost = 0.0;
  Tokens tokens = 0;
  auto add = [&](double c, Tokens t) { cost += c, tokens += t; };
  for (const RequestState& s : v.running) {
    if (s.in_prefill()) {
      add(m.prefill_cost(s.to_compute(), s.computed), s.to_compute());
    } else if (v.role != Role::Prefill) {
      const double d = m.decode_cost(s.context_len());
      per_iter += d;
      iteration += d;
    }
  }
  for (const RequestState& s : v.waiting) add(m.prefill_cost(s.to_compute(), s.computed), s.to_compute());
  for (const PendingPrefill& x : extra) add(x.cost, x.tokens);
  const double backlog = std::max(0.0, v.busy_until - now) + cost + double((tokens + budget - 1) / budget) * per_iter;
  return iteration - backlog;
}

// `hold` (see the header): by deadline while the front request has room, then the hopeless ones.
std::vector<Assignment> SloPredictPolicy::poll_held(Time now, const std::vector<InstanceView>& views) {
  std::vector<Assignment> out;
  std::vector<double> room(views.size(), -kNever);  // one iteration minus the backlog, s
  static const std::vector<PendingPrefill> kNone;
  std::vector<char> queued(views.size(), 0);  // prefill queued: its next iteration has prefill to run
  auto refresh = [&](size_t i) {
    const InstanceView& v = views[i];
    auto it = placed_.find(v.id);
    if (v.accepting) room[i] = held_room(v, it == placed_.end() ? kNone : it->second, now);
    bool q = !v.waiting.empty() || (it != placed_.end() && !it->second.empty());
    for (const RequestState& s : v.running) q = q || s.in_prefill();
    queued[i] = q;
  };
  for (size_t i = 0; i < views.size(); ++i) refresh(i);
  std::vector<std::map<HeldKey, Request>::node_type> waiting;  // on time where their cache is, no room there yet
  while (!held_.empty() || !hopeless_.empty()) {
    const bool on_time = !held_.empty();
    auto node = on_time ? held_.extract(held_.begin()) : std::map<HeldKey, Request>::node_type{};
    const Request r = on_time ? node.mapped() : hopeless_.begin()->second;  // a copy: node may go back
    Request planned = r;
    planned.slo = planning_slo(r);
    SloPrediction best, want;
    int j = -1;                    // where r's cached prefix saves more
    PromptChains chains(planned);  // hashed once: for the choice and for the in-flight blocks
    const int i = choose_among(planned, chains, now, views, &room, best, &j, &want);
    if (i < 0) {  // no room for r anywhere: r and everything behind it wait for the next poll
      if (on_time) held_.insert(std::move(node));
      break;
    }
    // That instance has no room yet and i has prefill queued (it does not run dry while r
    // waits): r waits for it, its prefill reserved there so that later predictions queue behind it.
    if (on_time && j >= 0 && !(room[size_t(j)] + want.saved > 0) && queued[size_t(i)]) {
      reserve(planned, views[size_t(j)], want.cached);
      refresh(size_t(j));
      waiting.push_back(std::move(node));
      continue;
    }
    if (on_time && best.finish > node.key().first) {  // late even where it would go now: triage
      held_at_[r.id] = {kNever, node.key().second};
      hopeless_.emplace(node.key().second, r);
      continue;
    }
    placed_here(planned, views[size_t(i)], best.cached, chains);
    if (!on_time) hopeless_.erase(hopeless_.begin());
    held_at_.erase(r.id);
    out.push_back({r.id, views[size_t(i)].id});
    refresh(size_t(i));
  }
  for (auto& n : waiting) held_.insert(std::move(n));
  return out;
}

int SloPredictPolicy::choose(const Request& r, Time now, const std::vector<InstanceView>& views) {
  Request planned = r;
  planned.slo = planning_slo(r);
  SloPrediction best;
  PromptChains chains(planned);
  const int pick = choose_among(planned, chains, now, views, nullptr, best);
  if (pick >= 0) placed_here(planned, views[size_t(pick)], best.cached, chains);
  return pick;
}

int SloPredictPolicy::choose_among(const Request& planned, PromptChains& chains, Time now,
                                   const std::vector<InstanceView>& views, const std::vector<double>* room,
                                   SloPrediction& best, int* cache, SloPrediction* there) {
  const Request& r = planned;
  static const std::vector<PendingPrefill> kNone;
  std::vector<SloPrediction> preds;
  std::vector<int> index;
  for (size_t i = 0; i < views.size(); ++i) {
    const InstanceView& v = views[i];
    if (!v.accepting) continue;
    Tokens cached = 0;
    if (!r.prefix.empty()) {
      const std::vector<uint64_t>& chain = chains.get(v.block_size);
      cached = std::max(v.cached_prefix_tokens(chain), inflight_prefix_tokens(v.id, chain, v.block_size));
    }
    auto it = placed_.find(v.id);
    const std::vector<PendingPrefill>& extra = it == placed_.end() ? kNone : it->second;
    PendingQueue& q = queues_[v.id];
    const bool kept = p_.queue_memo != QueueMemo::Rescan && q.sync(p_, v, extra, poll_);
    const SloPrediction pred =
        kept ? q.predict(v, planned, cached, now) : predict_slo(p_, v, planned, cached, now, extra);
    if (kept && p_.queue_memo == QueueMemo::Check && !same_bits(pred, predict_slo(p_, v, planned, cached, now, extra)))
      throw std::logic_error("slo_predict: the kept queue of instance " + std::to_string(v.id) +
                             " predicts otherwise than the rescan");
    preds.push_back(pred);
    index.push_back(int(i));
  }
  std::vector<SloPrediction> all;
  std::vector<int> all_index;
  if (cache) all = preds, all_index = index;
  if (room) {  // its cached prefix buys back backlog
    size_t n = 0;
    for (size_t k = 0; k < preds.size(); ++k) {
      if (!((*room)[size_t(index[k])] + preds[k].saved > 0)) continue;
      preds[n] = preds[k];
      index[n++] = index[k];
    }
    preds.resize(n);
    index.resize(n);
  }
  const int k = choose_placement(preds, now, p_.margin, room != nullptr);
  if (k < 0) return -1;
  best = preds[size_t(k)];
  if (cache) {  // saves more of r's prefill than `best`, r on time there with the margin, no more loss
    *cache = -1;
    for (size_t c = 0; c < all.size(); ++c) {
      const SloPrediction& x = all[c];
      if (!(x.saved > best.saved && x.slack >= p_.margin && x.loss <= best.loss)) continue;
      if (*cache < 0 || x.saved > there->saved || (x.saved == there->saved && better_placement(x, *there)))
        *cache = all_index[c], *there = x;
    }
  }
  return index[size_t(k)];
}

void SloPredictPolicy::reserve(const Request& r, const InstanceView& v, Tokens cached) {
  const Tokens own = std::max<Tokens>(1, r.prompt_len - cached);
  placed_[v.id].push_back({due(r, 1), own, v.model.prefill_cost(own, cached), r.prompt_len});
}

void SloPredictPolicy::placed_here(const Request& r, const InstanceView& v, Tokens cached, PromptChains& chains) {
  reserve(r, v, cached);
  const int prio = std::clamp(r.priority, 0, mapper_.config().levels() - 1);
  Track* t = track_.find(r.id);
  if (t) {  // a retry
    if (t->first < 0) --waiting_first_[size_t(t->priority)];
    release_blocks(*t);
  } else {
    t = track_.emplace(r.id, Track{});
  }
  *t = Track{prio, r.arrival, -1.0, 0, v.id, {}};
  ++waiting_first_[size_t(prio)];
  if (r.prefix.empty()) return;
  t->blocks = chains.get(v.block_size);
  auto& held = inflight_[v.id];
  for (uint64_t h : t->blocks) ++held[h];
}

Tokens SloPredictPolicy::inflight_prefix_tokens(Id instance, const std::vector<uint64_t>& chain, int block_size) const {
  auto it = inflight_.find(instance);
  return it == inflight_.end() ? 0 : leading_held(chain, it->second) * block_size;
}

void SloPredictPolicy::release_blocks(Track& t) {
  if (t.blocks.empty()) return;
  auto it = inflight_.find(t.instance);
  if (it != inflight_.end()) {
    for (uint64_t h : t.blocks)
      if (auto b = it->second.find(h); b != it->second.end() && --b->second <= 0) it->second.erase(b);
    if (it->second.empty()) inflight_.erase(it);
  }
  t.blocks.clear();
}

void SloPredictPolicy::first_token(Track& t, Time now) {
  if (t.first >= 0) return;
  t.first = now;
  --waiting_first_[size_t(t.priority)];
}

void SloPredictPolicy::on_prefill_done(Id request, Id, Time now) {
  if (Track* t = track_.find(request)) first_token(*t, now);
}

void SloPredictPolicy::on_cancelled(Id request, Time now) {
  PushPolicy::on_cancelled(request, now);
  if (auto h = held_at_.find(request); h != held_at_.end()) {
    if (held_.erase(h->second) == 0) hopeless_.erase(h->second.second);
    held_at_.erase(h);
  }
  Track* t = track_.find(request);
  if (!t) return;
  if (t->first < 0) --waiting_first_[size_t(t->priority)];
  release_blocks(*t);
  track_.erase(request);
}

void SloPredictPolicy::on_token(Id request, Id, Tokens generated, Time now) {
  Track* t = track_.find(request);
  if (!t) return;
  t->generated = generated;
  if (generated == 1) first_token(*t, now);
}

void SloPredictPolicy::on_finished(Id request, Id, Time now) {
  Track* found = track_.find(request);
  if (!found) return;
  Track& t = *found;
  if (t.first < 0) {
    --waiting_first_[size_t(t.priority)];
  } else if (t.generated > 1) {  // a completed request feeds the mapper's windows (Alg. 2)
    mapper_.record(t.priority, std::max(0.0, t.first - t.arrival), 0.0, (now - t.first) / double(t.generated - 1));
  }
  release_blocks(t);
  track_.erase(request);
}

}  // namespace slocore::stack
