#include "slocore/sim/prefix_cache.h"

#include "slocore/core/errors.h"

namespace slocore::sim {

int64_t PrefixCache::match_blocks(const std::vector<uint64_t>& chain) const { return match_from(chain, 0); }

int64_t PrefixCache::match_from(const std::vector<uint64_t>& chain, int64_t start) const {
  return leading_held(chain, *this, start);
}

PrefixCache::Block* PrefixCache::find(uint64_t h) {
  const uint32_t k = lookup(h);
  return k == kNone ? nullptr : &blocks_[k];
}

PrefixCache::Block& PrefixCache::at(uint64_t h) {
  Block* b = find(h);
  require(b != nullptr, "prefix_cache", "no such cached block");
  return *b;
}

void PrefixCache::unlink(Block& b) {
  (b.prev_ != kNone ? blocks_[b.prev_].next_ : head_) = b.next_;
  (b.next_ != kNone ? blocks_[b.next_].prev_ : tail_) = b.prev_;
  b.prev_ = b.next_ = kNone;
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
  const uint32_t k = uint32_t(&b - blocks_.data());
  b.prev_ = tail_;  // joins the queue's back: the most recently freed
  (tail_ != kNone ? blocks_[tail_].next_ : head_) = k;
  tail_ = k;
  ++free_n_;
  return true;
}

PrefixCache::Block* PrefixCache::insert_block(uint64_t h) {
  const uint32_t k = spare_.empty() ? uint32_t(blocks_.size()) : spare_.back();
  if (index_.insert(h, k) != kNone) return nullptr;
  if (spare_.empty())
    blocks_.emplace_back();
  else
    spare_.pop_back();
  Block& b = blocks_[k];
  b.hash_ = h;
  b.refs_ = 1;
  b.holders = 0;
  return &b;
}

bool PrefixCache::evict_lru() {
  if (head_ == kNone) return false;
  const uint32_t k = head_;
  Block& b = blocks_[k];
  last_evicted_ = b.hash_;
  unlink(b);
  b.refs_ = -1;
  b.watchers.clear();  // keeps its storage for the slot's next block
  spare_.push_back(k);
  ++evictions_;
  index_.erase(last_evicted_);
  return true;
}

void PrefixCache::clear_watchers() {
  for (Block& b : blocks_) b.watchers.clear();
}

int PrefixCache::refs(uint64_t h) const {
  const uint32_t k = lookup(h);
  return k == kNone ? -1 : blocks_[k].refs_;
}

std::vector<uint64_t> PrefixCache::free_queue() const {
  std::vector<uint64_t> out;
  out.reserve(size_t(free_n_));
  for (uint32_t k = head_; k != kNone; k = blocks_[k].next_) out.push_back(blocks_[k].hash_);
  return out;
}

}  // namespace slocore::sim
