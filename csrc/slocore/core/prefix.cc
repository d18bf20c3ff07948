#include "slocore/core/prefix.h"

#include <algorithm>

#include "slocore/core/errors.h"

namespace slocore {

namespace {

// splitmix64 finaliser: a fixed, platform-independent mix (vLLM uses sha256; any
// collision-free-in-practice chain serves the model).
uint64_t mix(uint64_t h, uint64_t x) {
  uint64_t z = h ^ (x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

constexpr uint64_t kRoot = 0x736c6f636f726531ULL;    // the chain's parent of block 0
constexpr uint64_t kIdSeed = 0x69642d626c6f636bULL;  // the seed of an id block's group hash

Tokens covered(const Request& r) {
  Tokens c = 0;
  for (const PrefixSegment& s : r.prefix) c += s.len;
  return c;
}

}  // namespace

Tokens identified_tokens(const Request& r, Tokens generated) {
  const Tokens c = covered(r);
  if (r.prefix.empty()) return 0;
  return c >= r.prompt_len ? r.prompt_len + std::max<Tokens>(generated, 0) : c;
}

std::vector<uint64_t> prefix_block_hashes(const Request& r, int block_size, Tokens max_tokens) {
  require(block_size >= 1, "block_size", "must be >= 1");
  std::vector<uint64_t> out;
  if (r.prefix.empty()) return out;
  const bool open = covered(r) >= r.prompt_len;  // the last segment runs on past the prompt
  const Tokens ident = open ? max_tokens : std::min(max_tokens, covered(r));
  const int64_t blocks = std::max<Tokens>(ident, 0) / block_size;
  out.reserve(size_t(blocks));
  const size_t last = r.prefix.size() - 1;
  size_t si = 0;
  Tokens off = 0;  // offset inside segment si
  uint64_t parent = kRoot;
  for (int64_t b = 0; b < blocks; ++b) {
    uint64_t content = uint64_t(block_size);
    Tokens need = block_size;
    while (need > 0) {
      const PrefixSegment& seg = r.prefix[si];
      const Tokens avail = (si == last && open) ? need : seg.len - off;
      const Tokens take = std::min(need, avail);
      content = mix(mix(mix(content, seg.group), uint64_t(off)), uint64_t(take));
      off += take;
      need -= take;
      if (off == seg.len && si < last) ++si, off = 0;
    }
    parent = mix(parent, content);
    out.push_back(parent);
  }
  return out;
}

std::vector<uint64_t> prompt_block_hashes(const Request& r, int block_size) {
  return prefix_block_hashes(r, block_size, r.prompt_len - 1);
}

std::vector<PrefixSegment> id_block_segments(const std::vector<int64_t>& ids, int ids_per_block, int tokens_per_block,
                                             int64_t max_blocks) {
  require(ids_per_block >= 1, "ids_per_block", "must be >= 1");
  require(tokens_per_block >= 1, "tokens_per_block", "must be >= 1");
  std::vector<PrefixSegment> out;
  const size_t n = ids.size();
  for (size_t start = 0; start < n && int64_t(out.size()) < max_blocks; start += size_t(ids_per_block)) {
    const size_t end = std::min(n, start + size_t(ids_per_block));
    uint64_t g = kIdSeed;
    for (size_t k = start; k < end; ++k) g = mix(g, uint64_t(ids[k]));
    const Tokens len = end - start == size_t(ids_per_block)
                           ? Tokens(tokens_per_block)
                           : Tokens((int64_t(end - start) * tokens_per_block + ids_per_block - 1) / ids_per_block);
    out.push_back(PrefixSegment{g, len});
  }
  return out;
}

ApproxPrefixIndex::ApproxPrefixIndex(int64_t capacity_blocks) : capacity_(capacity_blocks) {
  require(capacity_blocks >= 1, "capacity_blocks", "must be >= 1");
}

int64_t ApproxPrefixIndex::match_blocks(const std::vector<uint64_t>& chain) const { return leading_held(chain, pos_); }

void ApproxPrefixIndex::record(const std::vector<uint64_t>& chain) {
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    auto p = pos_.find(*it);
    if (p != pos_.end()) {
      lru_.splice(lru_.end(), lru_, p->second);
    } else {
      lru_.push_back(*it);
      pos_.emplace(*it, std::prev(lru_.end()));
    }
  }
  while (int64_t(pos_.size()) > capacity_) {
    pos_.erase(lru_.front());
    lru_.pop_front();
  }
}

}  // namespace slocore
