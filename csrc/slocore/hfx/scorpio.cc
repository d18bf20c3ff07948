#include "slocore/hfx/scorpio.h"

#include <algorithm>

#include "slocore/hfx/dispatcher.h"

namespace slocore::hfx {

void ScorpioPolicy::submit(const Request& r, Time now, Time) {
  validate(r);
  if (reqs_.count(r.id)) fail("request.id", "duplicate id " + std::to_string(r.id) + " in scorpio");
  reqs_.emplace(r.id, r);
  queue_.insert({r.arrival + r.slo.ttft, r.id});
}

std::vector<Assignment> ScorpioPolicy::poll(Time now, const std::vector<InstanceView>& views) {
  now_ = now;
  std::vector<Assignment> out;
  std::vector<int> order;  // accepting instances in id order
  for (size_t i = 0; i < views.size(); ++i)
    if (views[i].accepting) order.push_back(int(i));
  if (order.empty()) return out;
  std::sort(order.begin(), order.end(), [&](int a, int b) { return views[a].id < views[b].id; });
  std::vector<InstanceLoad> load;
  for (int i : order) load.push_back(instance_load(views[size_t(i)]));
  auto next_rr = [&]() {  // the next accepting instance after last_ in id order
    for (size_t k = 0; k < order.size(); ++k)
      if (views[size_t(order[k])].id > last_) return k;
    return size_t(0);
  };
  for (auto it = queue_.begin(); it != queue_.end();) {
    const Request& r = reqs_.at(it->second);
    const size_t k = next_rr();
    const InstanceView& v = views[size_t(order[k])];
    InstanceLoad& L = load[k];
    const double l = double(r.prompt_len);
    // TTFT guard: queued prefill work on the RR instance plus this prompt.
    const double ttft_est = v.model.stage_prefill(L.prefill_tokens + l, L.prefill_sq + l * l);
    if (now + ttft_est > r.arrival + r.slo.ttft) {  // unattainable: rejected (served last)
      rejected_.insert({r.arrival, r.id});
      it = queue_.erase(it);
      continue;
    }
    // TPOT guard: the RR instance must still decode within its tightest TPOT with one more.
    const double tpot = std::min(L.min_tpot, r.slo.tpot);
    if (!L.idle && v.model.stage_decode(L.all_ctx + l, L.all_batch + 1) > tpot) break;  // wait
    out.push_back({r.id, v.id});
    last_ = v.id;
    L.idle = false, L.prefill_tokens += l, L.prefill_sq += l * l, L.all_ctx += l, L.all_batch += 1;
    L.min_tpot = tpot;
    reqs_.erase(r.id);
    it = queue_.erase(it);
  }
  for (size_t k = 0; k < order.size() && !rejected_.empty(); ++k) {  // best effort, no prefill queued
    if (load[k].prefill_tokens > 0) continue;
    const Id id = rejected_.begin()->second;
    rejected_.erase(rejected_.begin());
    load[k].prefill_tokens += double(reqs_.at(id).prompt_len);  // one per instance per poll
    reqs_.erase(id);
    out.push_back({id, views[size_t(order[k])].id});
  }
  return out;
}

}  // namespace slocore::hfx
