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
  std::vector<const RequestState*> all;
  v.for_each_request([&](const RequestState& s, bool) { all.push_back(&s); });
  std::vector<SliceTask> tasks;
  double ctx = 0.0;
  for (const RequestState* s : all) {
    tasks.push_back({s->request.slo.tpot, adapted_utility(*s, p_, now)});
    ctx += double(s->num_tokens());
  }
  ctx = all.empty() ? 0.0 : ctx / double(all.size());
  const BatchLatencyCurve l =
      BatchLatencyCurve::from_model(v.model, Tokens(ctx), std::max<int>(2, int(all.size()) + 1));
  std::vector<size_t> pick = select_slice_tasks(tasks, l, p_.max_cycle, p_.spread, size_t(v.max_num_seqs));
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

BatchPlan SliceScheduler::schedule(const InstanceView& v, Time now) {
  std::vector<Id>& ids = ids_;
  ids.clear();
  v.for_each_request([&](const RequestState& s, bool) { ids.push_back(s.request.id); });
  std::sort(ids.begin(), ids.end());
  if (ids != known_) {  // an arrival or a departure: Alg. 4 restarts SLICE-offline
    known_.swap(ids);
    reschedule(v, now);
  }
  using Where = Candidate;  // plan_builder.h
  // Where each request is: a flat id table, filled from the back (insert keeps the first value,
  // so an id seen twice maps where a map's assignment in queue order would leave it).
  const size_t nr = v.running.size();
  where_.clear(v.num_requests());
  for (size_t i = v.waiting.size(); i-- > 0;) where_.insert(v.waiting[i].request.id, int64_t(nr + i));
  for (size_t i = nr; i-- > 0;) where_.insert(v.running[i].request.id, int64_t(i));
  struct {
    const InstanceView& v;
    const IdIndex& ix;
    size_t nr;
    Where at(Id id) const {
      const int64_t* k = ix.find(id);
      require(k != nullptr, "selected", "names a request that is not on this instance");
      const size_t i = size_t(*k);
      return i < nr ? Where{&v.running[i], true, i} : Where{&v.waiting[i - nr], false, i - nr};
    }
  } where{v, where_, nr};
  // Victims: selected running tasks in selection order, then the unselected (evicted first).
  std::vector<size_t> victims;
  std::vector<char> is_sel(v.running.size(), 0);
  for (Id id : selected_) {
    const Where w = where.at(id);
    if (w.running) victims.push_back(w.index), is_sel[w.index] = 1;
  }
  for (size_t i = 0; i < v.running.size(); ++i)
    if (!is_sel[i]) victims.push_back(i);

  PlanBuilder b(v, v.max_batch_tokens);
  for (int tries = 0; tries < std::max(1, mask_.cols()) && b.planned_count() == 0; ++tries) {
    if (mask_.cols() > 0) {  // the current column's decodes (Alg. 3 lines 14-19)
      std::vector<size_t> order;
      for (size_t pos : mask_.column(col_)) {
        const Where w = where.at(selected_[pos]);
        if (w.s->in_prefill()) continue;
        if (w.running)
          order.push_back(w.index);
        else
          b.add(*w.s, false, 1, false);  // P/D: handed off, KV arrives with it
      }
      run_with_preemption(b, order, victims);
      col_ = (col_ + 1) % mask_.cols();
    }
    for (Id id : selected_) {  // selected tasks still to prefill join this iteration
      const Where w = where.at(id);
      if (!w.s->in_prefill() || b.planned(id)) continue;
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
