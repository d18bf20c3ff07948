// SLICE online scheduler (SLICE Alg. 2-4; see slice/slice_scheduler.h).
#include "slocore/slice/slice_scheduler.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "slocore/core/errors.h"

namespace slocore::slice {

void SliceParams::validate() const { check_params(*this, "slice"); }

ParamMap SliceScheduler::params() const { return write_params(p_); }

double adapted_utility(const RequestState& s, const SliceParams& p, Time now) {
  double u = s.request.utility;
  if (p.adaptor == Adaptor::Sjf) u /= 1.0 + double(s.generated) / p.sjf_tokens;
  if (p.demote_late && s.request.realtime()) {
    const Tokens left = std::max<Tokens>(s.request.output_len_or(1) - s.generated, 0);
    if (now + double(left) * s.request.slo.tpot > s.request.arrival + *s.request.slo.deadline) u *= 1e-3;
  }
  return u;
}

void SliceScheduler::reschedule(const InstanceView& v, Time now) {
  ++reschedules_;
  std::vector<const RequestState*>& all = all_;
  all.clear();
  v.for_each_request([&](const RequestState& s, bool) { all.push_back(&s); });
  std::vector<SliceTask>& tasks = tasks_;
  tasks.clear();
  double ctx = 0.0;
  for (const RequestState* s : all) {
    tasks.push_back({s->request.slo.tpot, adapted_utility(*s, p_, now)});
    ctx += double(s->num_tokens());
  }
  ctx = all.empty() ? 0.0 : ctx / double(all.size());
  // The selection reads l at batch sizes 0..min(max tasks, tasks) only, and l at a size k >= 1
  // depends only on the curve's points k-1 and k (at k = 1: the first): a curve through those
  // points, not one per request, gives the same values.
  const size_t max_tasks = size_t(v.max_num_seqs);
  const size_t points = std::min(max_tasks, all.size()) + 1;
  const BatchLatencyCurve l = BatchLatencyCurve::from_model(v.model, Tokens(ctx), std::max<int>(2, int(points)));
  std::vector<size_t> pick = select_slice_tasks(tasks, l, p_.max_cycle, p_.spread, max_tasks);
  if (pick.empty() && !all.empty()) {  // no livelock: one task alone over the cycle still runs
    pick = select_slice_tasks(tasks, l, kNever, p_.spread, 1);
  }
  selected_.clear();
  std::vector<int> rates;
  for (size_t i : pick) {
    selected_.push_back(all[i]->request.id);
    rates.push_back(rate_of(tasks[i].tpot));
  }
  mask_ = DecodeMask(rates, p_.spread);
  col_ = 0;
}

void SliceScheduler::locate(const InstanceView& v) {
  const size_t nr = v.running.size();
  at_.assign(selected_.size(), Candidate{nullptr, false, 0});
  auto put = [&](size_t pos, size_t i) {
    at_[pos] = i < nr ? Candidate{&v.running[i], true, i} : Candidate{&v.waiting[i - nr], false, i - nr};
  };
  if (dups_) {  // an id seen twice: where the last of them is (a map assigned in view order)
    where_.clear(v.num_requests());
    for (size_t i = v.waiting.size(); i-- > 0;) where_.insert(v.waiting[i].request.id, int64_t(nr + i));
    for (size_t i = nr; i-- > 0;) where_.insert(v.running[i].request.id, int64_t(i));
    for (size_t pos = 0; pos < selected_.size(); ++pos)
      if (const int64_t* k = where_.find(selected_[pos])) put(pos, size_t(*k));
    return;
  }
  // Distinct ids in the view: scan it until every selected id is found; they are mostly
  // running or near the front of the queue. (A selected id named twice takes its first's place.)
  where_.clear(selected_.size());
  repeats_.clear();
  for (size_t pos = 0; pos < selected_.size(); ++pos)
    if (!where_.insert(selected_[pos], int64_t(pos))) repeats_.push_back(pos);
  size_t left = selected_.size() - repeats_.size();
  for (size_t i = 0; i < nr && left > 0; ++i)
    if (const int64_t* pos = where_.find(v.running[i].request.id)) put(size_t(*pos), i), --left;
  for (size_t i = 0; i < v.waiting.size() && left > 0; ++i)
    if (const int64_t* pos = where_.find(v.waiting[i].request.id)) put(size_t(*pos), nr + i), --left;
  for (size_t pos : repeats_) at_[pos] = at_[size_t(*where_.find(selected_[pos]))];
}

BatchPlan SliceScheduler::schedule(const InstanceView& v, Time now) {
  // Alg. 4 restarts SLICE-offline on an arrival or a departure: when the multiset of ids
  // differs from the last selection's. The ids in the same view order as the last call's are
  // the same multiset (no sort needed).
  ids_.clear();
  v.for_each_request([&](const RequestState& s, bool) { ids_.push_back(s.request.id); });
  if (ids_ != seq_) {
    sorted_.assign(ids_.begin(), ids_.end());
    std::sort(sorted_.begin(), sorted_.end());
    if (sorted_ != known_) {
      known_.swap(sorted_);
      dups_ = std::adjacent_find(known_.begin(), known_.end()) != known_.end();
      reschedule(v, now);
    }
    seq_.swap(ids_);
  }
  locate(v);
  using Where = Candidate;  // plan_builder.h
  auto at = [&](size_t pos) -> const Where& {
    require(at_[pos].s != nullptr, "selected", "names a request that is not on this instance");
    return at_[pos];
  };
  // Victims: selected running tasks in selection order, then the unselected (evicted first).
  std::vector<size_t> victims;
  std::vector<char> is_sel(v.running.size(), 0);
  for (size_t pos = 0; pos < selected_.size(); ++pos) {
    const Where& w = at(pos);
    if (w.running) victims.push_back(w.index), is_sel[w.index] = 1;
  }
  for (size_t i = 0; i < v.running.size(); ++i)
    if (!is_sel[i]) victims.push_back(i);

  PlanBuilder b(v, v.max_batch_tokens);
  for (int tries = 0; tries < std::max(1, mask_.cols()) && b.planned_count() == 0; ++tries) {
    if (mask_.cols() > 0) {  // the current column's decodes (Alg. 3 lines 14-19)
      std::vector<size_t> order;
      for (size_t pos : mask_.column(col_)) {
        const Where& w = at(pos);
        if (w.s->in_prefill()) continue;
        if (w.running)
          order.push_back(w.index);
        else
          b.add(*w.s, false, 1, false);  // P/D: handed off, KV arrives with it
      }
      run_with_preemption(b, order, victims);
      col_ = (col_ + 1) % mask_.cols();
    }
    for (size_t pos = 0; pos < selected_.size(); ++pos) {  // selected tasks still to prefill join this iteration
      const Where& w = at(pos);
      if (!w.s->in_prefill() || b.planned(w.s->request.id)) continue;
      // KV short: evict unselected running tasks (the back of `victims`) to make room.
      size_t back = victims.size();
      while (b.add_next(*w.s, w.running, true) == 0 && !b.seq_full() && b.budget_left() > 0) {
        while (back > 0 && (is_sel[victims[back - 1]] || b.planned(v.running[victims[back - 1]].request.id))) --back;
        if (back == 0) break;
        b.preempt(v.running[victims[--back]]);
      }
    }
  }
  ensure_progress(b);
  return b.take();
}

}  // namespace slocore::slice
