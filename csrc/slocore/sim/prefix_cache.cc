#include "slocore/sim/prefix_cache.h"

#include "slocore/core/errors.h"

namespace slocore::sim {

int64_t PrefixCache::match_blocks(const std::vector<uint64_t>& chain) const { return match_from(chain, 0); }

int64_t PrefixCache::match_from(const std::vector<uint64_t>& chain, int64_t start) const {
  return leading_held(chain, map_, start);
}

bool PrefixCache::acquire(uint64_t h) {
  Entry& e = map_.at(h);
  const bool was_free = e.refs == 0;
  if (was_free) free_.erase(e.pos);
  ++e.refs;
  return was_free;
}

bool PrefixCache::release(uint64_t h) {
  Entry& e = map_.at(h);
  require(e.refs > 0, "prefix_cache", "released a block nobody references");
  if (--e.refs > 0) return false;
  e.pos = free_.insert(free_.end(), h);
  return true;
}

bool PrefixCache::insert(uint64_t h) {
  if (map_.count(h)) return false;
  map_.emplace(h, Entry{1, {}});
  return true;
}

bool PrefixCache::evict_lru() {
  if (free_.empty()) return false;
  last_evicted_ = free_.front();
  map_.erase(free_.front());
  free_.pop_front();
  ++evictions_;
  return true;
}

int PrefixCache::refs(uint64_t h) const {
  auto it = map_.find(h);
  return it == map_.end() ? -1 : it->second.refs;
}

}  // namespace slocore::sim
