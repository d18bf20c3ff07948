// Cache-aware baseline routers: what production routers do on chat and agent traffic.
//  llmd_scorer: llm-d's inference scheduler (EPP) default profile, a weighted sum of three
//    scorers, each in [0, 1], highest total wins: prefix-cache score (share of the prompt's
//    blocks the instance holds), queue score (min-max normalised waiting queue, shorter is
//    better; 1 for all when equal) and KV-cache-utilisation score (1 - utilisation). Default
//    weights 3 / 2 / 2 (llm-d's default-plugins.yaml); the prefix cache is the approximate
//    one (what this router sent there), as llm-d's default prefix-cache-scorer.
//  kv_router: NVIDIA Dynamo's KvRouter cost, lowest wins:
//      cost = overlap_weight * prefill_blocks + decode_blocks
//    prefill_blocks = (prompt tokens still to prefill on the instance + this request's
//    uncached prompt tokens) / block_size; decode_blocks = blocks of the requests active on
//    the instance + this request's prompt blocks. Default overlap_weight 1, precise overlap
//    (Dynamo's KV events), deterministic pick (temperature 0).
// Both count the requests placed earlier in the same poll. Ties go to the lowest index.
#pragma once
#include <string>

#include "slocore/policy/push_policy.h"

namespace slocore {

struct WeightedScorerParams {
  double w_prefix = 3.0, w_queue = 2.0, w_kv = 2.0;
  std::string prefix_source = "approximate";  // approximate | precise
  void validate() const;
};

class WeightedScorerPolicy : public PushPolicy {
 public:
  explicit WeightedScorerPolicy(WeightedScorerParams p = {});
  std::string name() const override { return "llmd_scorer"; }
  ParamMap params() const override;

 protected:
  int choose(const Request& r, Time now, const std::vector<InstanceView>& views) override;

 private:
  WeightedScorerParams p_;
};

struct KvRouterParams {
  double overlap_weight = 1.0;
  std::string prefix_source = "precise";  // precise | approximate
  void validate() const;
};

class KvRouterPolicy : public PushPolicy {
 public:
  explicit KvRouterPolicy(KvRouterParams p = {});
  std::string name() const override { return "kv_router"; }
  ParamMap params() const override;
  // The cost of placing r on v with `cached` prompt tokens there and `placed_tokens` prompt
  // tokens / `placed` requests placed on it earlier in this poll.
  double cost(const Request& r, const InstanceView& v, Tokens cached, int64_t placed_tokens) const;

 protected:
  int choose(const Request& r, Time now, const std::vector<InstanceView>& views) override;

 private:
  KvRouterParams p_;
};

// Leading prompt tokens of a request (its chains) that v holds, from `source` (approximate | precise).
Tokens cached_prompt_tokens(PromptChains& chains, const InstanceView& v, const std::string& source);

}  // namespace slocore
