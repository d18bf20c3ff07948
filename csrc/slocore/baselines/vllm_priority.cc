#include "slocore/baselines/vllm_priority.h"

#include <algorithm>
#include <numeric>
#include <utility>

namespace slocore {

BatchPlan VllmPriorityScheduler::schedule(const InstanceView& v, Time) {
  PlanBuilder b(v, token_budget_ > 0 ? token_budget_ : v.max_batch_tokens);
  const auto& run = v.running;
  auto key = [](const RequestState& s) { return std::make_pair(s.request.priority, s.request.arrival); };
  auto victims = [&] {  // the back is the lowest priority, then the newest; sorted only when the KV runs out
    std::vector<size_t> out(run.size());
    std::iota(out.begin(), out.end(), 0);
    std::stable_sort(out.begin(), out.end(), [&](size_t x, size_t y) { return key(run[x]) < key(run[y]); });
    return out;
  };
  std::vector<size_t> order(run.size());
  std::iota(order.begin(), order.end(), 0);
  const bool preempted = vllm_running_pass(b, run, order, victims, [](size_t, Tokens) {});
  if (!preempted) {
    std::vector<const RequestState*> waiting;
    for (const RequestState& s : v.waiting) waiting.push_back(&s);
    std::stable_sort(waiting.begin(), waiting.end(), [&](auto* a, auto* c) { return key(*a) < key(*c); });
    for (const RequestState* s : waiting)
      if (b.budget_left() <= 0 || b.seq_full() || b.add_next(*s, false, true) == 0) break;
  }
  ensure_progress(b);
  return b.take();
}

}  // namespace slocore
