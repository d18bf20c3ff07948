#include "slocore/stack/instance_rates.h"

#include <algorithm>
#include <cmath>

namespace slocore::stack {

void InstanceRates::decay(Time now) {
  if (t0_ < 0) {
    t_ = t0_ = now;
    return;
  }
  if (now > t_) {
    const double f = std::exp(-(now - t_) / window_s_);
    freed_ *= f;
    taken_ *= f;
    for (auto& [level, work] : work_) work *= f;
    t_ = now;
  }
}

double InstanceRates::seen_s(Time now) const { return window_s_ * (1.0 - std::exp(-(now - t0_) / window_s_)); }

void InstanceRates::observe(const InstanceView& v, Time now) {
  decay(now);
  // New requests: the whole queue, or, in an engine's view (epoch set: arrivals are appended,
  // preempted requests, seen running, go to the front), the tail back to the first request
  // seen before. Added in queue order either way, so the sums are the same doubles.
  size_t from = 0;
  if (v.epoch != 0) {
    from = v.waiting.size();
    while (from > 0 && !known_.find(v.waiting[from - 1].request.id)) --from;
  }
  for (size_t i = from; i < v.waiting.size(); ++i) {
    const RequestState& s = v.waiting[i];
    if (known_.emplace(s.request.id, 0)) work_[s.request.priority] += v.model.prefill_cost(s.to_compute(), 0);
  }
  for (const RequestState& s : v.running) {
    const int64_t blocks = v.blocks_for(s.computed);
    if (int64_t* b = known_.find(s.request.id)) {
      *b = blocks;
    } else {
      known_.emplace(s.request.id, blocks);
    }
    if (!s.in_prefill()) taken_ += double(v.blocks_needed(s, 1, true));
  }
  // Bounded memory when finishes are not reported (an integration that skips on_finished):
  // forget the requests this view no longer has.
  const size_t on_engine = v.running.size() + v.waiting.size();
  if (known_.size() > 8 * on_engine + kKeepAtLeast) {
    IdSlab<int64_t> kept;
    v.for_each_request([&](const RequestState& s, bool) {
      const int64_t* b = known_.find(s.request.id);
      kept.emplace(s.request.id, b ? *b : 0);
    });
    known_ = std::move(kept);
  }
}

void InstanceRates::finished(Id id, Time now) {
  const int64_t* blocks = known_.find(id);
  if (!blocks) return;
  decay(now);
  freed_ += double(*blocks);
  known_.erase(id);
}

double InstanceRates::kv_release_rate(Time now) {
  decay(now);
  const double seen = seen_s(now);
  return seen > 1e-9 ? std::max(0.0, freed_ - taken_) / seen : 0.0;
}

double InstanceRates::busy_above(int priority, Time now) {
  decay(now);
  const double seen = seen_s(now);
  if (!(seen > 1e-9)) return 0.0;
  double work = 0.0;
  for (const auto& [level, w] : work_) {
    if (level >= priority) break;
    work += w;
  }
  return work / seen;
}

}  // namespace slocore::stack
