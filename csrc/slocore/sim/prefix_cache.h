// One engine's prefix cache, as vLLM's KV block manager keeps it (automatic prefix caching):
// every full block whose content is known is keyed by its chained hash (core/prefix.h) and
// counted by the requests that reference it. A block no request references stays cached in
// a free queue, least recently freed first; it still counts as free KV, and it is evicted
// (its hash forgotten) only when a new block needs the space. Blocks referenced by running
// requests are never evicted. The engine keeps the KV budget; this class keeps identities.
#pragma once
#include <list>
#include <unordered_map>
#include <vector>

#include "slocore/core/prefix.h"

namespace slocore::sim {

class PrefixCache : public PrefixLookup {
 public:
  int64_t match_blocks(const std::vector<uint64_t>& chain) const override;
  // Leading blocks of chain present, checking from `start` on (blocks before it known present).
  int64_t match_from(const std::vector<uint64_t>& chain, int64_t start) const;
  // A request references cached block h; true when h left the free queue (KV now in use).
  bool acquire(uint64_t h);
  // A request drops h; true when h joined the free queue (no request references it).
  bool release(uint64_t h);
  // A newly computed full block, referenced by its request; false when h is cached already
  // (computed twice at once: the second copy stays the request's own, as in vLLM).
  bool insert(uint64_t h);
  // Forgets the least recently freed block (then last_evicted() names it); false when the
  // free queue is empty.
  bool evict_lru();
  uint64_t last_evicted() const { return last_evicted_; }

  int64_t cached_free() const { return int64_t(free_.size()); }  // evictable blocks
  int64_t size() const { return int64_t(map_.size()); }
  int64_t evictions() const { return evictions_; }
  int refs(uint64_t h) const;                                                        // -1 when not cached
  std::vector<uint64_t> free_queue() const { return {free_.begin(), free_.end()}; }  // LRU first

 private:
  struct Entry {
    int refs = 0;
    std::list<uint64_t>::iterator pos;  // in free_ when refs == 0
  };
  std::unordered_map<uint64_t, Entry> map_;
  std::list<uint64_t> free_;
  int64_t evictions_ = 0;
  uint64_t last_evicted_ = 0;
};

}  // namespace slocore::sim
