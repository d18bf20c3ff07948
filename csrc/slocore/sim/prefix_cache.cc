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

void PrefixCache::grow() {
  std::vector<Slot> old(index_.empty() ? 1024 : 2 * index_.size());
  old.swap(index_);
  const size_t mask = index_.size() - 1;
  for (const Slot& s : old) {
    if (s.block == kNone) continue;
    size_t i = size_t(s.hash) & mask;
    while (index_[i].block != kNone) i = (i + 1) & mask;
    index_[i] = s;
  }
}

PrefixCache::Block* PrefixCache::insert_block(uint64_t h) {
  if (2 * (size_ + 1) > int64_t(index_.size())) grow();
  const size_t mask = index_.size() - 1;
  size_t i = size_t(h) & mask;
  for (; index_[i].block != kNone; i = (i + 1) & mask)
    if (index_[i].hash == h) return nullptr;
  uint32_t k;
  if (spare_.empty()) {
    k = uint32_t(blocks_.size());
    blocks_.emplace_back();
  } else {
    k = spare_.back();
    spare_.pop_back();
  }
  index_[i] = Slot{h, k};
  ++size_;
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
  --size_;
  ++evictions_;
  // Backward-shift deletion: entries after the hole that may move into it do.
  const size_t mask = index_.size() - 1;
  size_t hole = size_t(last_evicted_) & mask;
  while (index_[hole].block != k) hole = (hole + 1) & mask;
  for (size_t j = (hole + 1) & mask; index_[j].block != kNone; j = (j + 1) & mask) {
    const size_t home = size_t(index_[j].hash) & mask;
    // index_[j] stays unless its home lies cyclically outside (hole, j].
    const bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
    if (!stays) index_[hole] = index_[j], hole = j;
  }
  index_[hole] = Slot{};
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
