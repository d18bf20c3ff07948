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

int64_t LeastTokensPolicy::outstanding_tokens(const InstanceView& v, Tokens default_output) {
  int64_t total = 0;
  v.for_each_request([&](const RequestState& s, bool) {
    const Tokens out = s.request.expected_output_len.value_or(s.request.max_output_len.value_or(default_output));
    total += (s.in_prefill() ? s.to_compute() : 0) + std::max<Tokens>(out - s.generated, 0);
  });
  return total;
}

int LeastTokensPolicy::choose(const Request& r, Time, const std::vector<InstanceView>& views) {
  int best = -1;
  int64_t best_n = std::numeric_limits<int64_t>::max();
  for (size_t i = 0; i < views.size(); ++i) {
    if (!views[i].accepting) continue;
    const int64_t n = outstanding_tokens(views[i], Tokens(default_output_)) + placed_tokens(views[i].id);
    if (n < best_n) best = int(i), best_n = n;
  }
  return best;
}

}  // namespace slocore
