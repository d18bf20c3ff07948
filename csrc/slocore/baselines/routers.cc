#include "slocore/baselines/routers.h"

#include <limits>

namespace slocore {

int RoundRobinPolicy::choose(const Request&, Time, const std::vector<InstanceView>& views) {
  // The accepting instance with the smallest id above the last one, wrapping around.
  int best = -1, first = -1;
  for (size_t i = 0; i < views.size(); ++i) {
    if (!views[i].accepting) continue;
    const Id id = views[i].id;
    if (first < 0 || id < views[size_t(first)].id) first = int(i);
    if (id > last_ && (best < 0 || id < views[size_t(best)].id)) best = int(i);
  }
  const int pick = best >= 0 ? best : first;
  if (pick >= 0) last_ = views[size_t(pick)].id;
  return pick;
}

int RandomPolicy::choose(const Request&, Time, const std::vector<InstanceView>& views) {
  std::vector<int> ok;
  for (size_t i = 0; i < views.size(); ++i)
    if (views[i].accepting) ok.push_back(int(i));
  if (ok.empty()) return -1;
  return ok[std::uniform_int_distribution<size_t>(0, ok.size() - 1)(rng_)];
}

int LeastOutstandingPolicy::choose(const Request&, Time, const std::vector<InstanceView>& views) {
  int best = -1;
  int64_t best_n = std::numeric_limits<int64_t>::max();
  for (size_t i = 0; i < views.size(); ++i) {
    if (!views[i].accepting) continue;
    const int64_t n = int64_t(views[i].num_requests()) + placed_requests(views[i].id);
    if (n < best_n) best = int(i), best_n = n;  // ties: lowest index
  }
  return best;
}

namespace {
int64_t request_tokens(const RequestState& s, Tokens default_output) {
  const Tokens out = s.request.expected_output_len.value_or(s.request.max_output_len.value_or(default_output));
  return (s.in_prefill() ? s.to_compute() : 0) + std::max<Tokens>(out - s.generated, 0);
}
}  // namespace

int64_t LeastTokensPolicy::outstanding_tokens(const InstanceView& v, Tokens default_output) {
  int64_t total = 0;
  v.for_each_request([&](const RequestState& s, bool) { total += request_tokens(s, default_output); });
  return total;
}

int64_t LeastTokensPolicy::outstanding(const InstanceView& v) {
  const Tokens def = Tokens(default_output_);
  if (v.epoch == 0) return outstanding_tokens(v, def);  // untracked view: rescan
  Memo& m = memo_[v.id];
  if (m.epoch != v.epoch || m.waiting > v.waiting.size()) {
    m.epoch = v.epoch, m.waiting = 0, m.total = 0;
    for (const RequestState& s : v.running) m.total += request_tokens(s, def);
  }
  for (; m.waiting < v.waiting.size(); ++m.waiting) m.total += request_tokens(v.waiting[m.waiting], def);
  return m.total;
}

int LeastTokensPolicy::choose(const Request& r, Time, const std::vector<InstanceView>& views) {
  int best = -1;
  int64_t best_n = std::numeric_limits<int64_t>::max();
  for (size_t i = 0; i < views.size(); ++i) {
    if (!views[i].accepting) continue;
    const int64_t n = outstanding(views[i]) + placed_tokens(views[i].id);
    if (n < best_n) best = int(i), best_n = n;
  }
  return best;
}

}  // namespace slocore
