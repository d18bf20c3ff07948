#include "slocore/baselines/fair_schedulers.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <iterator>
#include <numeric>
#include <utility>

#include "slocore/core/errors.h"

namespace slocore {

// ---- weighted_vtc ------------------------------------------------------------------------

ParamMap WeightedVtcScheduler::params() const { return write_params(p_); }

double WeightedVtcScheduler::counter(int client) const {
  auto it = counter_.find(client);
  return it == counter_.end() ? 0.0 : it->second;
}

void WeightedVtcScheduler::charge(const RequestState& s, Tokens k) {
  const double w = s.in_prefill() ? p_.w_in : p_.w_out;
  counter_[s.request.priority] += w * double(k) / s.request.priority_weight;
}

BatchPlan WeightedVtcScheduler::schedule(const InstanceView& v, Time) {
  // Counter lift (VTC): a newly active client starts at the smallest active counter.
  std::set<int> active;
  v.for_each_request([&](const RequestState& s, bool) { active.insert(s.request.priority); });
  double lift = INFINITY;
  for (int c : active)
    if (active_.count(c)) lift = std::min(lift, counter(c));
  if (std::isfinite(lift))
    for (int c : active)
      if (!active_.count(c)) counter_[c] = std::max(counter(c), lift);
  active_ = std::move(active);

  PlanBuilder b(v, p_.token_budget);
  std::vector<size_t> decodes, victims(v.running.size());
  std::iota(victims.begin(), victims.end(), 0);
  for (size_t i = 0; i < v.running.size(); ++i)
    if (!v.running[i].in_prefill()) decodes.push_back(i);
  run_with_preemption(b, decodes, victims);
  for (const RequestState& s : v.running)  // prefills in progress keep their place
    if (s.in_prefill() && !b.planned(s.request.id)) b.add_next(s, true, true);
  // Waiting prompts: the least-served client first, FCFS within a client.
  std::map<int, std::vector<const RequestState*>> queues;
  for (const RequestState& s : v.waiting) queues[s.request.priority].push_back(&s);
  std::map<int, size_t> head;
  while (b.budget_left() > 0 && !b.seq_full()) {
    int best = 0;
    double best_c = INFINITY;
    for (const auto& [c, q] : queues)
      if (head[c] < q.size() && counter(c) < best_c) best = c, best_c = counter(c);
    if (!std::isfinite(best_c)) break;
    const RequestState& s = *queues[best][head[best]];
    const Tokens k = b.add_next(s, false, true);
    if (k == 0) break;
    charge(s, k);
    ++head[best];
  }
  ensure_progress(b);
  BatchPlan plan = b.take();
  // Charge what runs from the running queue (waiting prompts were charged above).
  std::unordered_map<Id, const RequestState*> running;
  for (const RequestState& s : v.running) running[s.request.id] = &s;
  for (const ScheduledItem& it : plan.items)
    if (auto r = running.find(it.request); r != running.end()) charge(*r->second, it.tokens);
  return plan;
}

// ---- mlfq --------------------------------------------------------------------------------

ParamMap MlfqScheduler::params() const { return write_params(p_); }

int MlfqScheduler::level(Id request) const {
  auto it = state_.find(request);
  return it == state_.end() ? -1 : it->second.level;
}

MlfqScheduler::State& MlfqScheduler::state_of(const RequestState& s, const InstanceView& v, Time now) {
  auto [it, fresh] = state_.try_emplace(s.request.id);
  State& st = it->second;
  if (fresh) {  // skip-join: the first level whose quantum covers the first iteration
    const double first = v.model.prefill_cost(s.request.prompt_len, 0);
    st.last_run = std::min(now, s.request.arrival);
    while (st.level + 1 < p_.levels && p_.base_quantum_s * std::ldexp(1.0, st.level) < first) ++st.level;
  }
  if (now - st.last_run > p_.promote_after_s) st.level = 0, st.served = 0.0, st.last_run = now;  // starvation guard
  return st;
}

void MlfqScheduler::on_finished(Id request, Time) {
  auto it = state_.find(request);
  if (it == state_.end()) return;
  const State& st = it->second;
  if (synced_ && st.present) {
    order_.erase(Key{st.level, st.arrival, request});
    if (!st.running) --waiting_known_;
  }
  state_.erase(it);  // its heap entry, if any, is dropped when it comes up
}

// Each call, every request's state (skip-join for a new one, the starvation guard) and
// one sort of them all by (level, arrival), ties by position (running, then waiting).
// With the engine's views (an epoch, the event contract of batch_scheduler.h) the same
// order is kept across calls instead (sync, plan_kept): per call, the running requests,
// the requests appended to the queue, the guard's due states and the plan's prefix of the
// order, not the whole queue. Same states, same plan; the full pass whenever the view is
// not one the order follows, an arrival is NaN, or two requests the plan reads share
// (level, arrival) (their order is then their positions).
BatchPlan MlfqScheduler::schedule(const InstanceView& v, Time now) {
  const bool follows = calls_.next(v);
  if (v.epoch == 0 || never_kept_) {
    synced_ = false;
  } else if (!(synced_ && follows && sync(v, now))) {
    rebuild(v, now);
  }
  BatchPlan plan;
  if (!synced_ || !plan_kept(v, plan)) plan = plan_full(v, now);
  account(v, plan, now);
  if (synced_) {
    last_running_.clear();
    for (const RequestState& s : v.running) last_running_.push_back(s.request.id);
  }
  return plan;
}

BatchPlan MlfqScheduler::plan_full(const InstanceView& v, Time now) {
  auto& c = sorted_;  // (level, arrival) -> candidate; kept between iterations for its storage
  c.clear();
  bool nan = false;
  for (size_t i = 0; i < v.running.size(); ++i)
    c.push_back({{state_of(v.running[i], v, now).level, v.running[i].request.arrival}, {&v.running[i], true, i}});
  for (size_t i = 0; i < v.waiting.size(); ++i)
    c.push_back({{state_of(v.waiting[i], v, now).level, v.waiting[i].request.arrival}, {&v.waiting[i], false, i}});
  for (const auto& x : c) nan |= std::isnan(x.first.second);
  if (nan) {  // no strict weak order: the stable sort as it was
    std::stable_sort(c.begin(), c.end(), [](const auto& a, const auto& d) { return a.first < d.first; });
  } else {  // the stable sort's order: ties by position (running, then waiting), without its buffer
    const size_t nr = v.running.size();
    auto pos = [nr](const Candidate& x) { return x.running ? x.index : nr + x.index; };
    std::sort(c.begin(), c.end(), [&](const auto& a, const auto& d) {
      if (a.first != d.first) return a.first < d.first;
      return pos(a.second) < pos(d.second);
    });
  }
  std::vector<Candidate> order;
  std::vector<size_t> victims;  // from the back: the lowest level, newest, yields KV first
  order.reserve(c.size());
  victims.reserve(v.running.size());
  for (const auto& [key, x] : c) {
    order.push_back(x);
    if (x.running) victims.push_back(x.index);
  }
  PlanBuilder b(v, v.max_batch_tokens);
  plan_in_order(b, order, std::move(victims));
  BatchPlan plan = b.take();
  if (state_.size() > 2 * c.size() + 64) {  // forget requests that left without on_finished
    std::unordered_map<Id, State> keep;
    for (const Candidate& x : order) keep.emplace(x.s->request.id, state_.at(x.s->request.id));
    state_.swap(keep);
    // The kept order's running states point into the old table.
    if (synced_)
      for (size_t i = 0; i < v.running.size(); ++i) run_state_[i] = &state_.at(v.running[i].request.id);
  }
  // The planned requests are found among the candidates in plan order's prefix (a plan
  // takes them from its front).
  item_of_.clear(plan.items.size());
  for (size_t k = 0; k < plan.items.size(); ++k) item_of_.insert(plan.items[k].request, int64_t(k));
  state_at_.assign(plan.items.size(), nullptr);
  size_t found = 0;
  for (size_t i = 0; i < order.size() && found < plan.items.size(); ++i)
    if (const int64_t* k = item_of_.find(order[i].s->request.id); k && !state_at_[size_t(*k)])
      state_at_[size_t(*k)] = order[i].s, ++found;
  return plan;
}

// Accounts the estimated service; demotes after a used-up quantum (state_at_: each plan
// item's request).
void MlfqScheduler::account(const InstanceView& v, const BatchPlan& plan, Time now) {
  for (size_t k = 0; k < plan.items.size(); ++k) {
    const ScheduledItem& it = plan.items[k];
    require(state_at_[k] != nullptr, "plan", "names a request that is not on this instance");
    const RequestState& s = *state_at_[k];
    State& st = state_.at(it.request);
    const int was = st.level;
    st.served += s.in_prefill() ? v.model.prefill_cost(it.tokens, s.computed) : v.model.decode_cost(s.computed);
    st.last_run = now;
    if (st.served >= p_.base_quantum_s * std::ldexp(1.0, st.level) && st.level + 1 < p_.levels) {
      ++st.level;
      st.served = 0.0;
    }
    if (synced_ && st.present) {
      if (st.level != was) {
        order_.erase(Key{was, st.arrival, it.request});
        order_.insert(Key{st.level, st.arrival, it.request});
      }
      if (!st.in_heap && !trivial(st)) watch(it.request, st);
    }
  }
}

// A request the kept order now follows (its state already through state_of).
void MlfqScheduler::track(Id id, State& st, bool running) {
  st.present = true;
  st.running = running;
  order_.insert(Key{st.level, st.arrival, id});
  if (!st.in_heap && !trivial(st)) watch(id, st);
}

// The guard heap gets an entry for the state (keyed by its last_run).
void MlfqScheduler::watch(Id id, State& st) {
  heap_.push_back({st.last_run, id});
  std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
  st.in_heap = true;
}

// The kept order from the whole view (a new engine, or after a full pass).
void MlfqScheduler::rebuild(const InstanceView& v, Time now) {
  synced_ = false;
  for (auto& [id, st] : state_) st.present = st.running = st.in_heap = false;
  order_.clear();
  heap_.clear();
  run_state_.clear();
  for (size_t i = 0; i < v.num_requests(); ++i) {
    const bool running = i < v.running.size();
    const RequestState& s = running ? v.running[i] : v.waiting[i - v.running.size()];
    if (std::isnan(s.request.arrival)) {
      never_kept_ = true;  // no order to keep
      return;
    }
    State& st = state_of(s, v, now);
    if (st.present) return;  // an id twice: the full pass
    st.arrival = s.request.arrival;
    st.seen = calls_.count();
    track(s.request.id, st, running);
    if (running) run_state_.push_back(&st);
  }
  waiting_known_ = v.waiting.size();
  synced_ = true;
}

// Brings the kept order from the last call's view to this one, as the engine changes it
// between calls (sim/engine.cc): the plan's waiting requests move to the end of `running`,
// its preempted ones to the front of `waiting`, finished, handed-off and cancelled ones
// leave (on_finished), arrivals are appended to `waiting`. False when the view is not
// that (checked where it is cheap: running, the queue's front and its new tail).
bool MlfqScheduler::sync(const InstanceView& v, Time now) {
  run_state_.clear();
  for (const RequestState& s : v.running) {
    auto f = state_.find(s.request.id);
    if (f == state_.end() || !f->second.present || f->second.seen == calls_.count()) return false;
    State& st = f->second;
    st.seen = calls_.count();
    if (!st.running) {  // admitted
      if (waiting_known_ == 0) return false;
      st.running = true;
      --waiting_known_;
    }
    run_state_.push_back(&st);
  }
  size_t preempted = 0;
  for (Id id : last_running_) {
    auto f = state_.find(id);
    if (f == state_.end() || !f->second.present || f->second.seen == calls_.count() || !f->second.running) continue;
    if (preempted >= v.waiting.size() || v.waiting[preempted].request.id != id) return false;
    f->second.running = false;  // preempted: at the queue's front, in running order
    ++waiting_known_;
    ++preempted;
  }
  if (v.waiting.size() < waiting_known_) return false;
  for (size_t j = waiting_known_; j < v.waiting.size(); ++j) {  // arrivals
    const RequestState& s = v.waiting[j];
    if (std::isnan(s.request.arrival)) return false;
    auto f = state_.find(s.request.id);
    if (f != state_.end() && f->second.present) return false;
    State& st = state_of(s, v, now);
    st.arrival = s.request.arrival;
    track(s.request.id, st, false);
  }
  waiting_known_ = v.waiting.size();
  guard(now);
  return true;
}

// The starvation guard for every request it can change: the heap's entries from the
// oldest last_run while now - last_run > promote_after_s (monotone in last_run, so every
// due state comes up). An entry's key is at most its state's last_run; it is checked
// against the state and put back with the state's last_run when that is not due.
void MlfqScheduler::guard(Time now) {
  auto later = std::greater<>();
  while (!heap_.empty() && now - heap_.front().first > p_.promote_after_s) {
    const Id id = heap_.front().second;
    std::pop_heap(heap_.begin(), heap_.end(), later);
    heap_.pop_back();
    auto f = state_.find(id);
    if (f == state_.end()) continue;
    State& st = f->second;
    if (!st.present || trivial(st)) {
      st.in_heap = false;
      continue;
    }
    if (now - st.last_run > p_.promote_after_s) {
      if (st.level != 0) {
        order_.erase(Key{st.level, st.arrival, id});
        order_.insert(Key{0, st.arrival, id});
      }
      st.level = 0, st.served = 0.0, st.last_run = now;
      st.in_heap = false;
      continue;
    }
    heap_.push_back({st.last_run, id});
    std::push_heap(heap_.begin(), heap_.end(), later);
  }
}

// plan_in_order over the kept order, read only as far as the batch goes. While no KV block
// is left, a waiting request gets nothing (PlanBuilder::add) and changes nothing, so the
// walk goes on from the next running request. False (nothing planned that counts) when
// two requests of the walk, or two running ones, share (level, arrival).
bool MlfqScheduler::plan_kept(const InstanceView& v, BatchPlan& plan) {
  const size_t nr = v.running.size();
  run_keys_.clear();
  running_at_.clear(nr);
  for (size_t i = 0; i < nr; ++i) {
    const State& st = *run_state_[i];
    run_keys_.push_back({Key{st.level, st.arrival, v.running[i].request.id}, i});
    running_at_.insert(v.running[i].request.id, int64_t(i));
  }
  std::sort(run_keys_.begin(), run_keys_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  victims_.clear();
  for (size_t i = 0; i < nr; ++i) {
    if (i > 0 && run_keys_[i].first.same_rank(run_keys_[i - 1].first)) return false;
    victims_.push_back(run_keys_[i].second);
  }
  waiting_.reset();
  PlanBuilder b(v, v.max_batch_tokens);
  size_t next_run = 0;  // run_keys_ not yet passed
  for (auto it = order_.begin(); it != order_.end();) {
    if (b.seq_full() || b.budget_left() <= 0) break;
    const Key& k = *it;
    if ((it != order_.begin() && std::prev(it)->same_rank(k)) ||
        (std::next(it) != order_.end() && std::next(it)->same_rank(k)))
      return false;
    if (const int64_t* i = running_at_.find(k.id)) {
      if (!b.planned(k.id)) run_with_preemption(b, size_t(*i), victims_);
      ++next_run;
      ++it;
      continue;
    }
    if (b.blocks_left() <= 0) {  // every waiting request up to the next running one is a no-op
      while (next_run < nr && run_keys_[next_run].first < k) ++next_run;
      if (next_run == nr) break;
      it = order_.find(run_keys_[next_run].first);
      continue;
    }
    const RequestState* s = waiting_.find(v, k.id);
    if (!s) {
      synced_ = false;
      return false;
    }
    if (!b.planned(k.id)) b.add_next(*s, false, true);
    ++it;
  }
  ensure_progress(b);
  plan = b.take();
  if (state_.size() > 2 * v.num_requests() + 64) {  // forget requests that left without on_finished
    for (auto it = state_.begin(); it != state_.end();) it = it->second.present ? std::next(it) : state_.erase(it);
  }
  state_at_.assign(plan.items.size(), nullptr);
  for (size_t k = 0; k < plan.items.size(); ++k) {
    const Id id = plan.items[k].request;
    if (const int64_t* i = running_at_.find(id))
      state_at_[k] = &v.running[size_t(*i)];
    else
      state_at_[k] = waiting_.find(v, id);
  }
  return true;
}

}  // namespace slocore
