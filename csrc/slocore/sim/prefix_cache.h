// One engine's prefix cache, as vLLM's KV block manager keeps it (automatic prefix caching):
// every full block whose content is known is keyed by its chained hash (core/prefix.h) and
// counted by the requests that reference it. A block no request references stays cached in
// a free queue, least recently freed first; it still counts as free KV, and it is evicted
// (its hash forgotten) only when a new block needs the space. Blocks referenced by running
// requests are never evicted. The engine keeps the KV budget; this class keeps identities.
//
// Storage: the blocks in a slab (a slot is reused after an eviction), found by an
// open-addressing index (core/flat_index.h; the chained hashes are well mixed already):
// router policies walk whole prompt chains through it every poll (HFX's dispatcher).
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "slocore/core/flat_index.h"
#include "slocore/core/prefix.h"
#include "slocore/core/types.h"

namespace slocore::sim {

class PrefixCache : public PrefixLookup {
 public:
  // A cached block, with what the engine tracks for it (sim::Engine's KV accounting), so
  // that one lookup reaches both. A reference to it is valid until the next insert (the
  // slab may grow).
  class Block {
   public:
    int refs() const { return refs_; }
    Id holders = 0;                                // XOR of the ids of the requests referencing it
    std::vector<std::pair<Id, int64_t>> watchers;  // (request, position) of waiting memos covering it

   private:
    friend class PrefixCache;
    uint64_t hash_ = 0;
    int refs_ = -1;                         // -1: a free slab slot
    uint32_t prev_ = kNone, next_ = kNone;  // the free queue's links, while refs_ == 0
  };

  int64_t match_blocks(const std::vector<uint64_t>& chain) const override;
  // Leading blocks of chain present, checking from `start` on (blocks before it known present).
  int64_t match_from(const std::vector<uint64_t>& chain, int64_t start) const;
  Block* find(uint64_t h);                                               // nullptr when not cached
  size_t count(uint64_t h) const { return lookup(h) != kNone ? 1 : 0; }  // as a set's (leading_held)
  // A request references cached block h; true when h left the free queue (KV now in use).
  bool acquire(uint64_t h) { return acquire(at(h)); }
  bool acquire(Block& b);
  // A request drops h; true when h joined the free queue (no request references it).
  bool release(uint64_t h) { return release(at(h)); }
  bool release(Block& b);
  // A newly computed full block, referenced by its request; false when h is cached already
  // (computed twice at once: the second copy stays the request's own, as in vLLM).
  bool insert(uint64_t h) { return insert_block(h) != nullptr; }
  Block* insert_block(uint64_t h);  // the new block, nullptr when cached already
  // The block evict_lru() would forget, nullptr when the free queue is empty.
  Block* lru() { return head_ == kNone ? nullptr : &blocks_[head_]; }
  // Forgets the least recently freed block (then last_evicted() names it); false when the
  // free queue is empty.
  bool evict_lru();
  uint64_t last_evicted() const { return last_evicted_; }
  void clear_watchers();  // every block's

  int64_t cached_free() const { return free_n_; }  // evictable blocks
  int64_t size() const { return int64_t(index_.size()); }
  int64_t evictions() const { return evictions_; }
  int refs(uint64_t h) const;                // -1 when not cached
  std::vector<uint64_t> free_queue() const;  // LRU first

 private:
  using Index = FlatIndex<KeyBits::Mixed>;
  static constexpr uint32_t kNone = Index::kNone;
  uint32_t lookup(uint64_t h) const { return index_.find(h); }  // slab index, kNone when not cached
  Block& at(uint64_t h);                                        // throws when not cached
  void unlink(Block& b);

  std::vector<Block> blocks_;
  std::vector<uint32_t> spare_;           // free slab slots
  Index index_;                           // hash -> slab slot
  uint32_t head_ = kNone, tail_ = kNone;  // free queue, least recently freed first
  int64_t free_n_ = 0;
  int64_t evictions_ = 0;
  uint64_t last_evicted_ = 0;
};

}  // namespace slocore::sim
