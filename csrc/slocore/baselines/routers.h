// Baseline global policies (one paragraph each in docs/baselines.md). Each places a request
// on arrival among the instances that accept traffic:
//  round_robin: the next instance in id order (Llumnix/HFX "RR" baseline).
//  random:      uniform choice, seeded (the usual lower bound).
//  least_outstanding: fewest running + waiting requests (ILS in SIBYL, "Min-Load" in ProServe).
//  least_tokens: least outstanding work in tokens: prompt tokens left to prefill plus
//               expected output tokens left to decode (vLLM router's "least-load" flavour).
#pragma once
#include <random>
#include <unordered_map>

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

struct RandomParams {
  uint64_t seed = 0;
  template <class V>
  void visit(V& v) {
    v.field("seed", seed, "seed of the instance choice", Range::at_least(0));
  }
};

class RandomPolicy : public PushPolicy {
 public:
  explicit RandomPolicy(RandomParams p = {}) : p_(p), rng_(p.seed) {}
  std::string name() const override { return "random"; }
  ParamMap params() const override { return write_params(p_); }

 protected:
  int choose(const Request& r, Time now, const std::vector<InstanceView>& views) override;

 private:
  RandomParams p_;
  std::mt19937_64 rng_;
};

class LeastOutstandingPolicy : public PushPolicy {
 public:
  std::string name() const override { return "least_outstanding"; }

 protected:
  int choose(const Request& r, Time now, const std::vector<InstanceView>& views) override;
};

struct LeastTokensParams {
  double default_output = 128;
  template <class V>
  void visit(V& v) {
    v.field("default_output", default_output, "output tokens assumed for a request of unknown length",
            Range::at_least(0));
  }
};

class LeastTokensPolicy : public PushPolicy {
 public:
  explicit LeastTokensPolicy(LeastTokensParams p = {}) : default_output_(p.default_output) {}
  std::string name() const override { return "least_tokens"; }
  ParamMap params() const override { return write_params(LeastTokensParams{default_output_}); }
  static int64_t outstanding_tokens(const InstanceView& v, Tokens default_output);

 protected:
  int choose(const Request& r, Time now, const std::vector<InstanceView>& views) override;

 private:
  // outstanding_tokens(v) kept per instance while v.epoch holds (running and the waiting
  // prefix unchanged): only requests appended to waiting since are added. Integer sums, so
  // the result equals a full rescan; a burst costs O(arrivals), not O(arrivals x queue).
  struct Memo {
    uint64_t epoch = 0;
    size_t waiting = 0;  // waiting requests summed in `total` (a prefix of v.waiting)
    int64_t total = 0;
  };
  int64_t outstanding(const InstanceView& v);
  double default_output_;
  std::unordered_map<Id, Memo> memo_;
};

}  // namespace slocore
