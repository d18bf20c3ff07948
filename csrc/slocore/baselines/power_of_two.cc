#include "slocore/baselines/power_of_two.h"

namespace slocore {

uint64_t PowerOfTwoPolicy::splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

int PowerOfTwoPolicy::choose(const Request&, Time, const std::vector<InstanceView>& views) {
  std::vector<int> ok;
  for (size_t i = 0; i < views.size(); ++i)
    if (views[i].accepting) ok.push_back(int(i));
  if (ok.empty()) return -1;
  if (ok.size() == 1) return ok[0];
  const uint64_t n = ok.size();
  const size_t a = size_t(splitmix64(state_) % n);
  size_t b = size_t(splitmix64(state_) % (n - 1));
  if (b >= a) ++b;  // two distinct samples
  auto load = [&](int i) { return int64_t(views[size_t(i)].num_requests()) + placed_requests(views[size_t(i)].id); };
  return load(ok[b]) < load(ok[a]) ? ok[b] : ok[a];
}

}  // namespace slocore
