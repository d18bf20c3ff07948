// An ordered set of keys kept in sorted blocks of at most kMaxBlock contiguous keys, with the
// first key of each block in one more array: a lookup is two binary searches over contiguous
// memory and an insert or erase moves at most a block's keys. For the few thousand waiting
// requests of an engine in a burst it replaces a std::set, whose red-black tree chased a
// pointer per level (a cache miss each) at every admission and preemption (docs/simulator.md,
// "The waiting order in sorted blocks"); for EDF's few hundred running ones, a sorted vector
// rewritten by a pass per iteration. Iterators walk both ways and are invalidated by any
// insert or erase.
#pragma once
#include <algorithm>
#include <cstddef>
#include <iterator>
#include <vector>

namespace slocore {

// Key: a strict weak order by operator<; keys that compare equivalent are the same key.
template <class Key, size_t kMaxBlock = 256>
class SortedBlocks {
  static_assert(kMaxBlock >= 4, "blocks are split in halves and merged below a quarter");

 public:
  class const_iterator {
   public:
    using iterator_category = std::bidirectional_iterator_tag;
    using value_type = Key;
    using difference_type = std::ptrdiff_t;
    using pointer = const Key*;
    using reference = const Key&;

    const_iterator() = default;
    reference operator*() const { return (*blocks_)[b_][i_]; }
    pointer operator->() const { return &(*blocks_)[b_][i_]; }
    const_iterator& operator++() {
      if (++i_ == (*blocks_)[b_].size()) ++b_, i_ = 0;
      return *this;
    }
    const_iterator operator++(int) {
      const_iterator old = *this;
      ++*this;
      return old;
    }
    const_iterator& operator--() {
      if (i_ == 0) i_ = (*blocks_)[--b_].size();
      --i_;
      return *this;
    }
    const_iterator operator--(int) {
      const_iterator old = *this;
      --*this;
      return old;
    }
    friend bool operator==(const const_iterator& a, const const_iterator& b) { return a.b_ == b.b_ && a.i_ == b.i_; }
    friend bool operator!=(const const_iterator& a, const const_iterator& b) { return !(a == b); }

   private:
    friend class SortedBlocks;
    const_iterator(const std::vector<std::vector<Key>>* blocks, size_t b, size_t i) : blocks_(blocks), b_(b), i_(i) {}
    const std::vector<std::vector<Key>>* blocks_ = nullptr;
    size_t b_ = 0, i_ = 0;  // block, index in it; end() is (number of blocks, 0)
  };

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  void clear() {
    blocks_.clear();
    firsts_.clear();
    size_ = 0;
  }
  const_iterator begin() const { return {&blocks_, 0, 0}; }
  const_iterator end() const { return {&blocks_, blocks_.size(), 0}; }

  // The first key not less than k.
  const_iterator lower_bound(const Key& k) const {
    if (blocks_.empty()) return end();
    const size_t b = block_of(k);
    const std::vector<Key>& keys = blocks_[b];
    const size_t i = size_t(std::lower_bound(keys.begin(), keys.end(), k) - keys.begin());
    return i < keys.size() ? const_iterator(&blocks_, b, i) : const_iterator(&blocks_, b + 1, 0);
  }

  // Inserts k; false (nothing changed) when an equivalent key is present.
  bool insert(const Key& k) {
    if (blocks_.empty()) {
      blocks_.push_back({k});
      firsts_.push_back(k);
      size_ = 1;
      return true;
    }
    const size_t b = block_of(k);
    std::vector<Key>& keys = blocks_[b];
    const auto at = std::lower_bound(keys.begin(), keys.end(), k);
    if (at != keys.end() && !(k < *at)) return false;
    const bool first = at == keys.begin();
    keys.insert(at, k);
    if (first) firsts_[b] = k;
    ++size_;
    if (keys.size() > kMaxBlock) split(b);
    return true;
  }

  // Erases the key equivalent to k; false when there is none.
  bool erase(const Key& k) {
    if (blocks_.empty()) return false;
    const size_t b = block_of(k);
    std::vector<Key>& keys = blocks_[b];
    const auto at = std::lower_bound(keys.begin(), keys.end(), k);
    if (at == keys.end() || k < *at) return false;
    keys.erase(at);
    --size_;
    if (keys.empty()) {
      blocks_.erase(blocks_.begin() + std::ptrdiff_t(b));
      firsts_.erase(firsts_.begin() + std::ptrdiff_t(b));
      return true;
    }
    firsts_[b] = keys.front();
    if (keys.size() < kMaxBlock / 4) merge(b);
    return true;
  }

 private:
  // The block whose range holds k: the last one whose first key is not greater than k (the
  // first block for a key below every key).
  size_t block_of(const Key& k) const {
    const size_t j = size_t(std::upper_bound(firsts_.begin(), firsts_.end(), k) - firsts_.begin());
    return j == 0 ? 0 : j - 1;
  }
  void split(size_t b) {
    std::vector<Key>& keys = blocks_[b];
    std::vector<Key> upper(keys.begin() + std::ptrdiff_t(keys.size() / 2), keys.end());
    keys.resize(keys.size() / 2);
    firsts_.insert(firsts_.begin() + std::ptrdiff_t(b + 1), upper.front());
    blocks_.insert(blocks_.begin() + std::ptrdiff_t(b + 1), std::move(upper));
  }
  // Block b is small: joins a neighbour when the two fit in one block.
  void merge(size_t b) {
    const size_t into = b > 0 ? b - 1 : b, from = into + 1;
    if (from >= blocks_.size() || blocks_[into].size() + blocks_[from].size() > kMaxBlock) return;
    blocks_[into].insert(blocks_[into].end(), blocks_[from].begin(), blocks_[from].end());
    blocks_.erase(blocks_.begin() + std::ptrdiff_t(from));
    firsts_.erase(firsts_.begin() + std::ptrdiff_t(from));
  }

  std::vector<std::vector<Key>> blocks_;  // each non-empty and sorted; every key of one < every key of the next
  std::vector<Key> firsts_;               // blocks_[j].front()
  size_t size_ = 0;
};

}  // namespace slocore
