// An ordered set of keys kept in sorted blocks of at most kMaxBlock contiguous keys, with the
// first key of each block in one more array: a lookup is two binary searches over contiguous
// memory and an insert or erase moves at most a block's keys. For the few thousand waiting
// requests of an engine in a burst it replaces a std::set, whose red-black tree chased a
// pointer per level (a cache miss each) at every admission and preemption (docs/simulator.md,
// "The waiting order in sorted blocks"); for EDF's few hundred running ones, a sorted vector
// rewritten by a pass per iteration. A block keeps spare room before its first key, so that an
// insert or erase moves the keys on the shorter side of it: EDF takes its requests from the
// front of both orders, where a block's every key moved at each erase (docs/simulator.md,
// "Shorter moves, two cache lines a request, recycled plans"). Iterators walk both ways and
// are invalidated by any insert or erase.
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

  // A block's keys are buf[off, buf.size()): [0, off) is room left by erases near the front,
  // taken back by inserts near it (or dropped when the buffer is full).
  class Block {
   public:
    size_t size() const { return buf_.size() - off_; }
    const Key& operator[](size_t i) const { return buf_[off_ + i]; }
    const Key& front() const { return buf_[off_]; }
    const Key* begin() const { return buf_.data() + off_; }
    const Key* end() const { return buf_.data() + buf_.size(); }
    void insert(size_t i, const Key& k) {
      if (off_ > 0 && 2 * i < size()) {  // the keys before i move one slot down
        Key* b = buf_.data() + off_;
        std::move(b, b + i, b - 1);
        --off_;
        buf_[off_ + i] = k;
        return;
      }
      if (off_ > 0 && buf_.size() == buf_.capacity()) compact();
      buf_.insert(buf_.begin() + std::ptrdiff_t(off_ + i), k);
    }
    void erase(size_t i) {
      if (2 * i < size()) {  // the keys before i move one slot up
        Key* b = buf_.data() + off_;
        std::move_backward(b, b + i, b + i + 1);
        ++off_;  // an emptied block is dropped by SortedBlocks::erase
        return;
      }
      buf_.erase(buf_.begin() + std::ptrdiff_t(off_ + i));
    }
    void push_back(const Key& k) { buf_.push_back(k); }
    void append(const Block& o) { buf_.insert(buf_.end(), o.begin(), o.end()); }
    // The keys from i on, taken out into a new block.
    Block split_off(size_t i) {
      Block upper;
      upper.buf_.assign(begin() + i, end());
      buf_.resize(off_ + i);
      return upper;
    }

   private:
    void compact() {
      buf_.erase(buf_.begin(), buf_.begin() + std::ptrdiff_t(off_));
      off_ = 0;
    }
    std::vector<Key> buf_;
    size_t off_ = 0;
  };

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
    const_iterator(const std::vector<Block>* blocks, size_t b, size_t i) : blocks_(blocks), b_(b), i_(i) {}
    const std::vector<Block>* blocks_ = nullptr;
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
    const Block& keys = blocks_[b];
    const size_t i = size_t(std::lower_bound(keys.begin(), keys.end(), k) - keys.begin());
    return i < keys.size() ? const_iterator(&blocks_, b, i) : const_iterator(&blocks_, b + 1, 0);
  }

  // Inserts k; false (nothing changed) when an equivalent key is present.
  bool insert(const Key& k) {
    if (blocks_.empty()) {
      blocks_.emplace_back().push_back(k);
      firsts_.push_back(k);
      size_ = 1;
      return true;
    }
    const size_t b = block_of(k);
    Block& keys = blocks_[b];
    const Key* at = std::lower_bound(keys.begin(), keys.end(), k);
    if (at != keys.end() && !(k < *at)) return false;
    const size_t i = size_t(at - keys.begin());
    keys.insert(i, k);
    if (i == 0) firsts_[b] = k;
    ++size_;
    if (keys.size() > kMaxBlock) split(b);
    return true;
  }

  // Erases the key equivalent to k; false when there is none.
  bool erase(const Key& k) {
    if (blocks_.empty()) return false;
    const size_t b = block_of(k);
    Block& keys = blocks_[b];
    const Key* at = std::lower_bound(keys.begin(), keys.end(), k);
    if (at == keys.end() || k < *at) return false;
    keys.erase(size_t(at - keys.begin()));
    --size_;
    if (keys.size() == 0) {
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
    Block upper = blocks_[b].split_off(blocks_[b].size() / 2);
    firsts_.insert(firsts_.begin() + std::ptrdiff_t(b + 1), upper.front());
    blocks_.insert(blocks_.begin() + std::ptrdiff_t(b + 1), std::move(upper));
  }
  // Block b is small: joins a neighbour when the two fit in one block.
  void merge(size_t b) {
    const size_t into = b > 0 ? b - 1 : b, from = into + 1;
    if (from >= blocks_.size() || blocks_[into].size() + blocks_[from].size() > kMaxBlock) return;
    blocks_[into].append(blocks_[from]);
    blocks_.erase(blocks_.begin() + std::ptrdiff_t(from));
    firsts_.erase(firsts_.begin() + std::ptrdiff_t(from));
  }

  std::vector<Block> blocks_;  // each non-empty and sorted; every key of one < every key of the next
  std::vector<Key> firsts_;    // blocks_[j].front()
  size_t size_ = 0;
};

}  // namespace slocore
