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
#include <unordered_map>

#include "slocore/core/params.h"
#include "slocore/policy/push_policy.h"

namespace slocore {

// Where a router reads an instance's cached prefix: what it sent there, or the engine's cache.
enum class PrefixSource { Approximate, Precise };
inline const EnumNames<PrefixSource> kPrefixSources = {{"approximate", PrefixSource::Approximate},
                                                       {"precise", PrefixSource::Precise}};

struct WeightedScorerParams {
  double w_prefix = 3.0, w_queue = 2.0, w_kv = 2.0;
  PrefixSource prefix_source = PrefixSource::Approximate;
  template <class V>
  void visit(V& v) {
    v.field("w_prefix", w_prefix, "weight of the prefix-cache score (llm-d default 3)", Range::at_least(0));
    v.field("w_queue", w_queue, "weight of the queue-depth score (llm-d default 2)", Range::at_least(0));
    v.field("w_kv", w_kv, "weight of the KV-utilisation score (llm-d default 2)", Range::at_least(0));
    v.field("prefix_source", prefix_source, "cached prefix: what this router sent there, or the engine's cache",
            kPrefixSources);
  }
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
  PrefixSource prefix_source = PrefixSource::Precise;
  template <class V>
  void visit(V& v) {
    v.field("overlap_weight", overlap_weight, "weight of the prefill blocks in the cost (Dynamo default 1)",
            Range::at_least(0));
    v.field("prefix_source", prefix_source, "cached prefix: the engine's cache (KV events), or what was sent",
            kPrefixSources);
  }
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
  // Sums cost() adds over v's requests (tokens left to prefill, blocks of every request),
  // kept per instance while v.epoch holds: only requests appended to waiting are added.
  struct Memo {
    uint64_t epoch = 0;
    size_t waiting = 0;  // waiting requests summed (a prefix of v.waiting)
    int64_t prefill = 0, blocks = 0;
  };
  // cost() from the memo when every partial sum is exact in a double (whole tokens, blocks in
  // 1/block_size steps with a power-of-two block size, magnitudes < 2^40), so adding the
  // totals equals cost()'s request-by-request sum bit for bit; else cost() itself.
  double cost_fast(const Request& r, const InstanceView& v, Tokens cached, int64_t placed_tokens);
  KvRouterParams p_;
  std::unordered_map<Id, Memo> memo_;
};

// Leading prompt tokens of a request (its chains) that v holds, from `source` (approximate |
// precise; precise falls back to the approximate index when v has no engine cache).
Tokens cached_prompt_tokens(PromptChains& chains, const InstanceView& v, PrefixSource source);

}  // namespace slocore
