#include "slocore/baselines/fair_schedulers.h"

#include <algorithm>
#include <cmath>
#include <numeric>

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
  if (now - st.last_run > p_.promote_after_s) st = State{0, 0.0, now};  // starvation guard
  return st;
}

BatchPlan MlfqScheduler::schedule(const InstanceView& v, Time now) {
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
  plan_in_order(b, order, victims);
  BatchPlan plan = b.take();
  if (state_.size() > 2 * c.size() + 64) {  // forget requests that left without on_finished
    std::unordered_map<Id, State> keep;
    for (const Candidate& x : order) keep.emplace(x.s->request.id, state_.at(x.s->request.id));
    state_.swap(keep);
  }
  // Account the estimated service; demote after a used-up quantum. The planned requests are
  // found among the candidates in plan order's prefix (a plan takes them from its front).
  item_of_.clear(plan.items.size());
  for (size_t k = 0; k < plan.items.size(); ++k) item_of_.insert(plan.items[k].request, int64_t(k));
  state_at_.assign(plan.items.size(), nullptr);
  size_t found = 0;
  for (size_t i = 0; i < order.size() && found < plan.items.size(); ++i)
    if (const int64_t* k = item_of_.find(order[i].s->request.id); k && !state_at_[size_t(*k)])
      state_at_[size_t(*k)] = order[i].s, ++found;
  for (size_t k = 0; k < plan.items.size(); ++k) {
    const ScheduledItem& it = plan.items[k];
    require(state_at_[k] != nullptr, "plan", "names a request that is not on this instance");
    const RequestState& s = *state_at_[k];
    State& st = state_.at(it.request);
    st.served += s.in_prefill() ? v.model.prefill_cost(it.tokens, s.computed) : v.model.decode_cost(s.computed);
    st.last_run = now;
    if (st.served >= p_.base_quantum_s * std::ldexp(1.0, st.level) && st.level + 1 < p_.levels) {
      ++st.level;
      st.served = 0.0;
    }
  }
  return plan;
}

}  // namespace slocore
