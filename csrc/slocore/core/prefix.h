// Prefix identity as vLLM's automatic prefix caching sees it: a prompt is cut into full
// blocks of `block_size` tokens and block j is keyed by a hash chained over blocks 0..j, so
// two prompts share block j exactly when their first (j+1)*block_size tokens are equal.
// Workloads describe token identity compactly as segments of shared texts (Request::prefix);
// the hashes here stand for the token hashes. Generated tokens continue the last segment
// when the segments cover the whole prompt (a chat answer becomes the next turn's history).
//
// PrefixLookup is what a router may ask of one instance: how many leading blocks of a chain
// it holds. The engine's real cache answers precisely (the simulator's engine; live, vLLM's
// KV events); ApproxPrefixIndex answers from what the router itself sent there (LRU-bounded).
#pragma once
#include <cstdint>
#include <list>
#include <unordered_map>
#include <utility>
#include <vector>

#include "slocore/core/request.h"

namespace slocore {

// Tokens of r whose identity is known once `generated` output tokens exist.
Tokens identified_tokens(const Request& r, Tokens generated);

// Chained hashes of the full blocks among the first min(max_tokens, identified) tokens of r.
std::vector<uint64_t> prefix_block_hashes(const Request& r, int block_size, Tokens max_tokens);

// The chain a router looks up for a new request: full blocks of its first prompt_len - 1
// tokens (vLLM always recomputes at least the last prompt token).
std::vector<uint64_t> prompt_block_hashes(const Request& r, int block_size);

// Prefix segments for a prompt known by its ids (the live router: token ids from the model's
// tokenizer, or characters in the text-block fallback): segment j covers ids
// [j * ids_per_block, (j + 1) * ids_per_block) and stands for `tokens_per_block` tokens; its
// group is a hash of those ids, so two prompts get equal leading segments exactly while their
// ids agree block by block (the chain in prefix_block_hashes then makes the hashes depend on
// the whole prefix). A last partial block counts ceil(ids * tokens_per_block / ids_per_block)
// tokens. At most `max_blocks` segments (bounded work per prompt; identity stops there).
std::vector<PrefixSegment> id_block_segments(const std::vector<int64_t>& ids, int ids_per_block, int tokens_per_block,
                                             int64_t max_blocks);

// The prompt chains of one request, computed once per block size (instances may differ).
class PromptChains {
 public:
  explicit PromptChains(const Request& r) : r_(r) {}
  const std::vector<uint64_t>& get(int block_size) {
    for (const auto& [bs, chain] : by_size_)
      if (bs == block_size) return chain;
    by_size_.emplace_back(block_size, prompt_block_hashes(r_, block_size));
    return by_size_.back().second;
  }

 private:
  const Request& r_;
  std::vector<std::pair<int, std::vector<uint64_t>>> by_size_;
};

// Leading hashes of `chain` that `set` holds (its count(h)), checked from `start` on (the
// blocks before it known held): the walk every prefix lookup makes.
template <class Set>
int64_t leading_held(const std::vector<uint64_t>& chain, const Set& set, int64_t start = 0) {
  int64_t n = start;
  while (size_t(n) < chain.size() && set.count(chain[size_t(n)])) ++n;
  return n;
}

class PrefixLookup {
 public:
  virtual ~PrefixLookup() = default;
  // Number of leading hashes of `chain` present.
  virtual int64_t match_blocks(const std::vector<uint64_t>& chain) const = 0;
};

// The router's approximate index of one instance: block hashes of the prompts it sent there,
// least recently sent evicted first beyond `capacity_blocks` (llm-d's approximate
// prefix-cache scorer and the vLLM router keep such an LRU per server).
class ApproxPrefixIndex : public PrefixLookup {
 public:
  explicit ApproxPrefixIndex(int64_t capacity_blocks);
  int64_t match_blocks(const std::vector<uint64_t>& chain) const override;
  // Records `chain` as sent here: every block becomes most recent, the first block last of
  // all (a chain is evicted from its tail, so its prefix survives longest).
  void record(const std::vector<uint64_t>& chain);
  int64_t size() const { return int64_t(pos_.size()); }
  int64_t capacity() const { return capacity_; }

 private:
  int64_t capacity_;
  std::list<uint64_t> lru_;  // front: least recent
  std::unordered_map<uint64_t, std::list<uint64_t>::iterator> pos_;
};

}  // namespace slocore
