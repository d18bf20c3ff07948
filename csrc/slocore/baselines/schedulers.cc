#include "slocore/baselines/schedulers.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <numeric>
#include <utility>

#include "slocore/batch/priority_order.h"
#include "slocore/core/metrics.h"

namespace slocore {

namespace {

// A prompt longer than the engine's batch token limit could never run whole: it is chunked
// (vLLM V1 always chunks; V0 refused such prompts at admission, which we do not model).
bool must_chunk(const RequestState& s, const InstanceView& v) { return s.to_compute() > v.max_batch_tokens; }

std::vector<size_t> indices(size_t n) {
  std::vector<size_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

}  // namespace

BatchPlan VllmFcfsScheduler::schedule(const InstanceView& v, Time) {
  PlanBuilder b(v, v.max_batch_tokens);
  // Unfinished prefills (chunks, recomputes) first, then new prompts FCFS while the running
  // requests stay within max_num_seqs (vLLM V0 counts them: num_curr_seqs in _schedule_prefills).
  bool prefilled = false;
  for (const RequestState& s : v.running)
    if (s.in_prefill()) prefilled |= b.add_next(s, true, p_.chunked || must_chunk(s, v)) > 0;
  size_t seqs = v.running.size();
  for (const RequestState& s : v.waiting) {
    if (seqs >= size_t(v.max_num_seqs)) break;
    if (b.add_next(s, false, p_.chunked || must_chunk(s, v)) == 0) break;  // FCFS: no skipping ahead
    prefilled = true;
    ++seqs;
  }
  if (prefilled) return b.take();  // prefill-first: this iteration does not decode
  std::vector<size_t> order;
  for (size_t i = 0; i < v.running.size(); ++i)
    if (!v.running[i].in_prefill()) order.push_back(i);
  std::vector<size_t> victims = indices(v.running.size());
  run_with_preemption(b, order, victims);
  ensure_progress(b);
  return b.take();
}

BatchPlan OrcaScheduler::schedule(const InstanceView& v, Time) {
  PlanBuilder b(v, v.max_batch_tokens);
  std::vector<size_t> victims = indices(v.running.size());
  run_with_preemption(b, indices(v.running.size()), victims);
  for (const RequestState& s : v.waiting)
    if (b.add_next(s, false, must_chunk(s, v)) == 0) break;
  ensure_progress(b);
  return b.take();
}

BatchPlan SarathiScheduler::schedule(const InstanceView& v, Time) {
  PlanBuilder b(v, p_.token_budget);
  std::vector<size_t> decodes, victims = indices(v.running.size());
  for (size_t i = 0; i < v.running.size(); ++i)
    if (!v.running[i].in_prefill()) decodes.push_back(i);
  auto later = [&](const RequestState& a, const RequestState& c) {  // served first
    return by_priority_ ? std::make_pair(a.request.priority, a.request.arrival) <
                              std::make_pair(c.request.priority, c.request.arrival)
                        : a.request.arrival < c.request.arrival;
  };
  if (by_priority_)  // victims from the back: lowest priority, then newest
    std::stable_sort(victims.begin(), victims.end(),
                     [&](size_t x, size_t y) { return later(v.running[x], v.running[y]); });
  run_with_preemption(b, decodes, victims);
  // Then chunked prefills: running ones (in progress) before new ones, each in order.
  std::vector<const RequestState*> pre;
  for (const RequestState& s : v.running)
    if (s.in_prefill() && !b.planned(s.request.id)) pre.push_back(&s);
  if (by_priority_) std::stable_sort(pre.begin(), pre.end(), [&](auto* a, auto* c) { return later(*a, *c); });
  auto full = [&] { return b.budget_left() <= 0 || b.seq_full(); };
  for (size_t i = 0; i < pre.size() && !full(); ++i) b.add_next(*pre[i], true, true);
  // Waiting requests hold no KV: with no free block left none of them can be planned, so the
  // passes below stop there instead of reading the rest of a long queue (same plan).
  auto kv_full = [&] { return b.blocks_left() <= 0; };
  if (!by_priority_) {  // FCFS: the waiting queue's front, as far as the batch reaches
    // A waiting request with computed - shared >= free blocks x block size cannot get a
    // token: the test PlanBuilder::add starts with, read here so a long queue on a KV-full
    // decode instance costs a comparison per request.
    const Tokens bs = v.block_size;
    for (auto it = v.waiting.begin(); it != v.waiting.end() && !full() && !kv_full(); ++it)
      if (it->computed - it->shared < b.blocks_left() * bs) b.add_next(*it, false, true);
  } else if (!full() && !kv_full()) {  // (priority, arrival, queue position) order, popped lazily
    PriorityArrivalOrder order;
    for (const RequestState& s : v.waiting) order.push(s);
    order.order_lazily();
    while (!order.empty() && !full() && !kv_full()) b.add_next(*order.next(), false, true);
  }
  ensure_progress(b);
  return b.take();
}

double EdfScheduler::next_deadline(const RequestState& s) {
  return token_deadline(s.request, s.generated + 1);  // of its next token, ProServe Eq. 3
}

// Every step by (deadline, running before waiting, queue position). With an engine's views
// (an epoch; the event contract of batch_scheduler.h) the order is kept across calls: the
// waiting requests' (batch/kept_queue.h) and the running ones' (batch/kept_running.h), so
// that a plan reads the requests it takes from the front of both orders and its victims
// from the back of the running one; where the engine reports its changes a call reads
// nothing else. Same plan; the heap over every waiting request each call otherwise, the
// full sort when a deadline is NaN.
BatchPlan EdfScheduler::schedule(const InstanceView& v, Time) {
  auto make = [&](const RequestState& s, WaitKey& k) {
    k.deadline = next_deadline(s);
    never_kept_ |= std::isnan(k.deadline);
    return !never_kept_;
  };
  if (never_kept_) kept_.forget();
  BatchPlan plan;
  if (never_kept_ || !kept_.follow(v, make) || !plan_kept(v, plan)) {
    running_.forget();
    plan = schedule_heap(v);
  }
  kept_.planned(v);
  return plan;
}

void EdfScheduler::on_finished(Id request, Time) {
  kept_.finished(request);
  running_.finished(request);
}

// schedule_heap's loop over the kept orders. While no KV block is left a waiting request gets
// nothing (PlanBuilder::add) and changes nothing, so the walk goes on from the next running
// request's deadline. False (no plan) when the view disagrees with what was kept.
bool EdfScheduler::plan_kept(const InstanceView& v, BatchPlan& plan) {
  if (!running_.follow(v, kept_.followed_changes(), next_deadline)) return false;
  const auto& run = running_.order();
  bool agrees = true;
  auto next = run.begin();   // the running request with the earliest deadline not taken yet
  auto victims = run.end();  // [begin, victims): the latest deadline is evicted first
  auto next_victim = [&](PlanBuilder& b) -> const RequestState* {
    for (; victims != run.begin(); --victims)
      if (!b.planned(std::prev(victims)->id)) break;
    if (victims == run.begin()) return nullptr;
    const RequestState* s = running_.find(v, *--victims);
    agrees &= s != nullptr;
    return s;
  };
  const auto& order = kept_.order();
  PlanBuilder b(v, p_.token_budget);
  auto it = order.begin();
  while (agrees && !b.seq_full() && b.budget_left() > 0) {
    const bool from_run = next != run.end() && (it == order.end() || next->key <= it->deadline);
    if (from_run) {
      if (b.planned(next->id)) {  // preempted already
        ++next;
        continue;
      }
      const RequestState* s = running_.find(v, *next++);
      if (!s) return false;
      run_with_preemption(b, *s, [&] { return next_victim(b); });
      continue;
    }
    if (it == order.end()) break;
    if (b.blocks_left() <= 0) {  // waiting no-ops up to the next running request
      if (next == run.end()) break;
      it = order.lower_bound(WaitKey{next->key, std::numeric_limits<int64_t>::min(), 0});
      continue;
    }
    const RequestState* s = kept_.find(v, *it);
    if (!s) return false;
    ++it;
    if (!b.planned(s->request.id)) b.add_next(*s, false, true);
  }
  if (!agrees) return false;
  ensure_progress(b);
  plan = b.take();
  return true;
}

BatchPlan EdfScheduler::schedule_heap(const InstanceView& v) {
  // The running ones sorted, the waiting ones popped lazily from a heap, as far as the batch
  // reaches.
  auto& run = run_;  // kept between iterations for their storage
  auto& wait = wait_;
  run.clear();
  wait.clear();
  bool nan = false;
  for (size_t i = 0; i < v.running.size(); ++i) run.push_back({next_deadline(v.running[i]), i});
  for (size_t i = 0; i < v.waiting.size(); ++i) wait.push_back({next_deadline(v.waiting[i]), i});
  for (const auto* q : {&run, &wait})
    for (const auto& x : *q) nan |= std::isnan(x.first);  // 0 * inf TPOT: no strict weak order
  if (nan) return schedule_sorted(v);
  std::stable_sort(run.begin(), run.end(), [](const auto& a, const auto& d) { return a.first < d.first; });
  std::vector<size_t> victims;  // running by deadline: the latest deadline is evicted first
  victims.reserve(run.size());
  for (const auto& x : run) victims.push_back(x.second);
  auto after = [](const std::pair<double, size_t>& a, const std::pair<double, size_t>& d) { return a > d; };
  std::make_heap(wait.begin(), wait.end(), after);
  PlanBuilder b(v, p_.token_budget);
  size_t r = 0;
  while (!b.seq_full() && b.budget_left() > 0) {
    const bool from_run = r < run.size() && (wait.empty() || run[r].first <= wait.front().first);
    if (from_run) {
      const size_t i = run[r++].second;
      run_with_preemption(b, i, victims);
      continue;
    }
    if (wait.empty()) break;
    std::pop_heap(wait.begin(), wait.end(), after);
    const RequestState& s = v.waiting[wait.back().second];
    wait.pop_back();
    if (!b.planned(s.request.id)) b.add_next(s, false, true);
  }
  ensure_progress(b);
  return b.take();
}

BatchPlan EdfScheduler::schedule_sorted(const InstanceView& v) {
  std::vector<std::pair<double, Candidate>> c;
  for (size_t i = 0; i < v.running.size(); ++i) c.push_back({next_deadline(v.running[i]), {&v.running[i], true, i}});
  for (size_t i = 0; i < v.waiting.size(); ++i) c.push_back({next_deadline(v.waiting[i]), {&v.waiting[i], false, i}});
  std::stable_sort(c.begin(), c.end(), [](const auto& a, const auto& d) { return a.first < d.first; });
  std::vector<Candidate> order;
  std::vector<size_t> victims;  // running by deadline: the latest deadline is evicted first
  for (const auto& [deadline, x] : c) {
    order.push_back(x);
    if (x.running) victims.push_back(x.index);
  }
  PlanBuilder b(v, p_.token_budget);
  plan_in_order(b, order, std::move(victims));
  return b.take();
}

}  // namespace slocore
