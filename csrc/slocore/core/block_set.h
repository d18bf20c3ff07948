// An engine's cached blocks as the engine itself reports them (live: vLLM's KV events, which
// the router translates to slocore chain hashes, core/prefix.h), answered as a PrefixLookup:
// the precise source behind InstanceView::prefix_cache when the simulator's engine is absent.
#pragma once
#include <cstdint>
#include <unordered_set>
#include <vector>

#include "slocore/core/prefix.h"

namespace slocore {

class BlockSet : public PrefixLookup {
 public:
  int64_t match_blocks(const std::vector<uint64_t>& chain) const override { return leading_held(chain, set_); }
  void add(const std::vector<uint64_t>& hs) { set_.insert(hs.begin(), hs.end()); }
  void remove(const std::vector<uint64_t>& hs) {
    for (uint64_t h : hs) set_.erase(h);
  }
  void clear() { set_.clear(); }
  int64_t size() const { return int64_t(set_.size()); }

 private:
  std::unordered_set<uint64_t> set_;
};

}  // namespace slocore
