// Baseline global policies (issue 4). Each places a request on arrival among the instances
// that accept traffic:
//  round_robin: the next instance in id order (Llumnix/HFX "RR" baseline).
//  random:      uniform choice, seeded (the usual lower bound).
//  least_outstanding: fewest running + waiting requests (ILS in SIBYL, "Min-Load" in ProServe).
//  least_tokens: least outstanding work in tokens: prompt tokens left to prefill plus
//               expected output tokens left to decode (vLLM router's "least-load" flavour).
#pragma once
#include <random>

#include "slocore/policy/push_policy.h"

namespace slocore {

class RoundRobinPolicy : public PushPolicy {
 public:
  std::string name() const override { return "round_robin"; }
 protected:
  int choose(const Request& r, Time now, const std::vector<InstanceView>& views) override;
 private:
  Id last_ = -1;
};

class RandomPolicy : public PushPolicy {
 public:
  explicit RandomPolicy(uint64_t seed = 0) : seed_(seed), rng_(seed) {}
  std::string name() const override { return "random"; }
  ParamMap params() const override { return {{"seed", double(seed_)}}; }
 protected:
  int choose(const Request& r, Time now, const std::vector<InstanceView>& views) override;
 private:
  uint64_t seed_;
  std::mt19937_64 rng_;
};

class LeastOutstandingPolicy : public PushPolicy {
 public:
  std::string name() const override { return "least_outstanding"; }
 protected:
  int choose(const Request& r, Time now, const std::vector<InstanceView>& views) override;
};

class LeastTokensPolicy : public PushPolicy {
 public:
  explicit LeastTokensPolicy(double default_output = 128) : default_output_(default_output) {}
  std::string name() const override { return "least_tokens"; }
  ParamMap params() const override { return {{"default_output", default_output_}}; }
  static int64_t outstanding_tokens(const InstanceView& v, Tokens default_output);
 protected:
  int choose(const Request& r, Time now, const std::vector<InstanceView>& views) override;
 private:
  double default_output_;
};

}  // namespace slocore
