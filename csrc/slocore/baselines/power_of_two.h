// power_of_two: the power of two choices (Mitzenmacher, "The Power of Two Choices in
// Randomized Load Balancing", IEEE TPDS 2001; the "p2c" balancer of Envoy, Finagle and the
// vLLM production-stack router). For each request, sample two distinct accepting instances
// uniformly at random and send it to the one with fewer outstanding (running + waiting +
// placed this poll) requests; ties go to the first sample. With one accepting instance, it
// is chosen. The generator is SplitMix64 (Steele et al., OOPSLA'14), so the pure-Python
// reference (python/slocore/reference/power_of_two.py) draws the same samples.
#pragma once
#include <cstdint>

#include "slocore/baselines/routers.h"
#include "slocore/policy/push_policy.h"

namespace slocore {

class PowerOfTwoPolicy : public PushPolicy {
 public:
  explicit PowerOfTwoPolicy(RandomParams p = {}) : seed_(p.seed), state_(p.seed) {}
  std::string name() const override { return "power_of_two"; }
  ParamMap params() const override { return write_params(RandomParams{seed_}); }
  static uint64_t splitmix64(uint64_t& state);

 protected:
  int choose(const Request& r, Time now, const std::vector<InstanceView>& views) override;

 private:
  uint64_t seed_;
  uint64_t state_;
};

}  // namespace slocore
