#include "slocore/sim/prefix_cache.h"

#include "slocore/core/errors.h"

namespace slocore::sim {

int64_t PrefixCache::match_blocks(const std::vector<uint64_t>& chain) const { return match_from(chain, 0); }

int64_t PrefixCache::match_from(const std::vector<uint64_t>& chain, int64_t start) const {
  return leading_held(chain, map_, start);
}

PrefixCache::Block* PrefixCache::find(uint64_t h) {
  auto it = map_.find(h);
  return it == map_.end() ? nullptr : &it->second;
}

void PrefixCache::unlink(Block& b) {
  (b.prev_ ? b.prev_->next_ : head_) = b.next_;
  (b.next_ ? b.next_->prev_ : tail_) = b.prev_;
  b.prev_ = b.next_ = nullptr;
  --free_n_;
}

bool PrefixCache::acquire(Block& b) {
  const bool was_free = b.refs_ == 0;
  if (was_free) unlink(b);
  ++b.refs_;
  return was_free;
}

bool PrefixCache::release(Block& b) {
  require(b.refs_ > 0, "prefix_cache", "released a block nobody references");
  if (--b.refs_ > 0) return false;
  b.prev_ = tail_;  // joins the queue's back: the most recently freed
  (tail_ ? tail_->next_ : head_) = &b;
  tail_ = &b;
  ++free_n_;
  return true;
}

PrefixCache::Block* PrefixCache::insert_block(uint64_t h) {
  auto [it, fresh] = map_.try_emplace(h);
  if (!fresh) return nullptr;
  it->second.refs_ = 1;
  it->second.hash_ = h;
  return &it->second;
}

bool PrefixCache::evict_lru() {
  if (!head_) return false;
  last_evicted_ = head_->hash_;
  unlink(*head_);
  map_.erase(last_evicted_);
  ++evictions_;
  return true;
}

void PrefixCache::clear_watchers() {
  for (auto& [h, b] : map_) b.watchers.clear();
}

int PrefixCache::refs(uint64_t h) const {
  auto it = map_.find(h);
  return it == map_.end() ? -1 : it->second.refs_;
}

std::vector<uint64_t> PrefixCache::free_queue() const {
  std::vector<uint64_t> out;
  out.reserve(size_t(free_n_));
  for (const Block* b = head_; b; b = b->next_) out.push_back(b->hash_);
  return out;
}

}  // namespace slocore::sim
