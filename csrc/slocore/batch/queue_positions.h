// The positions of an engine's waiting requests in its queue, for a scheduler that keeps the
// queue across calls (batch/kept_queue.h, SlideBatching): each request has a seq in queue
// order (given out here: the front's inserts count down from 0, appends count up), and a Fenwick tree over
// the slots seq - base counts the requests present, so that a request's index in the queue is
// the count before its seq, in O(log n).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace slocore {

class QueuePositions {
 public:
  // None present; the queue read as it is: seqs 0..n-1 (its front 0, its back n), slots for
  // them and `spare` more at each end.
  void reset(int64_t n, int64_t spare = 1024) {
    base_ = -(n + spare);
    tree_.assign(size_t(2 * (n + spare)), 0);
    front_ = 0;
    back_ = n;
  }
  // Seqs for k requests that join the queue's front, in queue order: first, first + 1, ...;
  // false when the slots at the front are used up (the caller reads its queue anew).
  bool take_front(size_t k, int64_t& first) {
    if (front_ - int64_t(k) < base_) return false;
    first = front_ -= int64_t(k);
    return true;
  }
  // The seq of a request appended at the queue's back.
  int64_t take_back() { return back_++; }
  // Every seq given out lies in [front(), back()).
  int64_t front() const { return front_; }
  int64_t back() const { return back_; }
  // A caller's per-seq data is indexed by slot(seq) in [0, slots()).
  size_t slot(int64_t seq) const { return size_t(seq - base_); }
  size_t slots() const { return tree_.size(); }
  // seq >= the lowest fitting one; a seq past the back gets twice its slots.
  void add(int64_t seq) {
    if (slot(seq) >= tree_.size()) grow(2 * slot(seq) + 64);
    count(seq, 1);
  }
  void remove(int64_t seq) { count(seq, -1); }
  // The requests present before seq: its index in the queue.
  size_t rank(int64_t seq) const {
    size_t r = 0;
    for (size_t i = slot(seq); i > 0; i &= i - 1) r += size_t(tree_[i - 1]);
    return r;
  }

 private:
  static size_t up(size_t i) { return i + (i & (~i + 1)); }  // 1-based: the node covering i next
  void count(int64_t seq, int d) {
    for (size_t i = slot(seq) + 1; i <= tree_.size(); i = up(i)) tree_[i - 1] += d;
  }
  void grow(size_t slots) {  // the counts read back (the O(n) build undone), then built over more slots
    for (size_t i = tree_.size(); i >= 1; --i)
      if (up(i) <= tree_.size()) tree_[up(i) - 1] -= tree_[i - 1];
    tree_.resize(slots, 0);
    for (size_t i = 1; i <= tree_.size(); ++i)
      if (up(i) <= tree_.size()) tree_[up(i) - 1] += tree_[i - 1];
  }

  std::vector<int> tree_;
  int64_t base_ = 0, front_ = 0, back_ = 0;
};

}  // namespace slocore
