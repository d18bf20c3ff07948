#include "slocore/baselines/cache_routers.h"

#include <algorithm>
#include <cmath>

namespace slocore {

Tokens cached_prompt_tokens(PromptChains& chains, const InstanceView& v, PrefixSource source) {
  const auto& chain = chains.get(v.block_size);
  if (chain.empty()) return 0;
  // Precise without the engine's cache (live: no or stale KV events) degrades to the approximate index.
  const bool precise = source == PrefixSource::Precise && v.prefix_cache;
  return precise ? v.precise_prefix_tokens(chain) : v.approx_prefix_tokens(chain);
}

WeightedScorerPolicy::WeightedScorerPolicy(WeightedScorerParams p) : p_(p) {}

ParamMap WeightedScorerPolicy::params() const { return write_params(p_); }

int WeightedScorerPolicy::choose(const Request& r, Time, const std::vector<InstanceView>& views) {
  std::vector<int> ok;
  int64_t qmin = 0, qmax = 0;
  for (size_t i = 0; i < views.size(); ++i) {
    if (!views[i].accepting) continue;
    const int64_t q = int64_t(views[i].waiting.size()) + placed_requests(views[i].id);
    if (ok.empty() || q < qmin) qmin = q;
    if (ok.empty() || q > qmax) qmax = q;
    ok.push_back(int(i));
  }
  int best = -1;
  double best_score = -1.0;
  PromptChains chains(r);
  for (int i : ok) {
    const InstanceView& v = views[size_t(i)];
    const int64_t q = int64_t(v.waiting.size()) + placed_requests(v.id);
    const double queue = qmax == qmin ? 1.0 : double(qmax - q) / double(qmax - qmin);
    const double kv = 1.0 - v.kv_utilization();
    double prefix = 0.0;
    if (!r.prefix.empty()) {
      const auto& chain = chains.get(v.block_size);
      if (!chain.empty())
        prefix = double(cached_prompt_tokens(chains, v, p_.prefix_source) / v.block_size) / double(chain.size());
    }
    const double score = p_.w_prefix * prefix + p_.w_queue * queue + p_.w_kv * kv;
    if (score > best_score) best = i, best_score = score;
  }
  return best;
}

KvRouterPolicy::KvRouterPolicy(KvRouterParams p) : p_(p) {}

ParamMap KvRouterPolicy::params() const { return write_params(p_); }

double KvRouterPolicy::cost(const Request& r, const InstanceView& v, Tokens cached, int64_t placed_tokens) const {
  const double bs = double(v.block_size);
  double prefill_tokens = double(r.prompt_len - cached) + double(placed_tokens);
  double active_blocks = double(v.blocks_for(r.prompt_len)) + double(placed_tokens) / bs;
  v.for_each_request([&](const RequestState& s, bool) {
    if (s.in_prefill()) prefill_tokens += double(s.to_compute());
    active_blocks += double(v.blocks_for(s.num_tokens()));
  });
  return p_.overlap_weight * prefill_tokens / bs + active_blocks;
}

double KvRouterPolicy::cost_fast(const Request& r, const InstanceView& v, Tokens cached, int64_t placed_tokens) {
  const int64_t bs = v.block_size;
  if (v.epoch == 0 || bs <= 0 || bs > 4096 || (bs & (bs - 1)) != 0) return cost(r, v, cached, placed_tokens);
  Memo& m = memo_[v.id];
  auto add = [&](const RequestState& s) {
    if (s.in_prefill()) m.prefill += s.to_compute();
    m.blocks += v.blocks_for(s.num_tokens());
  };
  if (m.epoch != v.epoch || m.waiting > v.waiting.size()) {
    m = Memo{v.epoch, 0, 0, 0};
    for (const RequestState& s : v.running) add(s);
  }
  for (; m.waiting < v.waiting.size(); ++m.waiting) add(v.waiting[m.waiting]);
  constexpr int64_t kExact = int64_t(1) << 40;
  const int64_t lead = std::abs(int64_t(r.prompt_len - cached)) + std::abs(placed_tokens);
  if (m.prefill < 0 || m.blocks < 0 || lead + m.prefill >= kExact ||
      v.blocks_for(r.prompt_len) + std::abs(placed_tokens) + m.blocks >= kExact)
    return cost(r, v, cached, placed_tokens);
  const double b = double(bs);
  const double prefill_tokens = double(r.prompt_len - cached) + double(placed_tokens) + double(m.prefill);
  const double active_blocks = double(v.blocks_for(r.prompt_len)) + double(placed_tokens) / b + double(m.blocks);
  return p_.overlap_weight * prefill_tokens / b + active_blocks;
}

int KvRouterPolicy::choose(const Request& r, Time, const std::vector<InstanceView>& views) {
  int best = -1;
  double best_cost = 0.0;
  PromptChains chains(r);
  for (size_t i = 0; i < views.size(); ++i) {
    const InstanceView& v = views[i];
    if (!v.accepting) continue;
    const Tokens cached = r.prefix.empty() ? 0 : cached_prompt_tokens(chains, v, p_.prefix_source);
    const double c = cost_fast(r, v, cached, placed_tokens(v.id));
    if (best < 0 || c < best_cost) best = int(i), best_cost = c;
  }
  return best;
}

}  // namespace slocore
