// An engine's index of its own waiting queue, and of its running batch. sim::Engine is the
// only writer of its view's `waiting` (appends, preempted requests put back at the front,
// admitted or cancelled ones taken out) and `running` (appends, requests taken out from
// anywhere), so it can keep each request's position through every change: a seq per request
// in queue order (batch/queue_positions.h: a Fenwick tree over the seqs present) and a flat
// id -> seq map. The engine then finds the requests a plan names, and those whose cached
// prefix changed, in O(log n) each, where a scan from the front read every request before
// them: in a burst, thousands of preempted requests sit in front of the fresh ones an EDF
// plan takes, and the plan names ~10 of several hundred running requests.
#pragma once
#include <vector>

#include "slocore/batch/queue_positions.h"
#include "slocore/core/errors.h"
#include "slocore/core/flat_index.h"
#include "slocore/core/instance_view.h"

namespace slocore::sim {

template <class Queue>
class Positions {
 public:
  static constexpr size_t npos = size_t(-1);

  // After q.push_back.
  void appended(const Queue& q) {
    if (pos_.back() - pos_.front() > int64_t(2 * q.size() + kSpare)) return rebuild(q);  // keep the tree small
    const int64_t seq = pos_.take_back();
    pos_.add(seq);
    slot_.insert(uint64_t(q.back().request.id), uint32_t(pos_.slot(seq)));
  }
  // After k requests were inserted at q's front (not for a std::vector).
  void prepended(const Queue& q, size_t k) {
    int64_t first = 0;
    if (!pos_.take_front(k, first)) return rebuild(q);
    for (size_t j = 0; j < k; ++j) {
      pos_.add(first + int64_t(j));
      slot_.insert(uint64_t(q[j].request.id), uint32_t(pos_.slot(first + int64_t(j))));
    }
  }
  // Before or after `id` left the queue.
  void removed(Id id) {
    const uint32_t k = slot_.find(uint64_t(id));
    if (k == Index::kNone) return;
    pos_.remove(seq_of(k));
    slot_.erase(uint64_t(id));
  }
  // Where `id` is in q, npos when it is not there.
  size_t find(const Queue& q, Id id) const {
    const uint32_t k = slot_.find(uint64_t(id));
    if (k == Index::kNone) return npos;
    const size_t i = pos_.rank(seq_of(k));
    require(i < q.size() && q[i].request.id == id, "engine", "its queue and its index disagree");
    return i;
  }
  // The queue read as it is (seqs 0..n-1 in queue order).
  void rebuild(const Queue& q) {
    pos_.reset(int64_t(q.size()), int64_t(kSpare));
    slot_.clear();
    for (size_t i = 0; i < q.size(); ++i) {
      pos_.add(int64_t(i));
      slot_.insert(uint64_t(q[i].request.id), uint32_t(pos_.slot(int64_t(i))));
    }
  }

 private:
  using Index = FlatIndex<KeyBits::Sequential>;
  static constexpr size_t kSpare = 1024;  // seqs at the front for preempted requests before a rebuild
  int64_t seq_of(uint32_t slot) const { return int64_t(slot) - int64_t(pos_.slot(0)); }

  QueuePositions pos_;
  Index slot_;  // id -> pos_.slot(its seq)
};

using WaitingPositions = Positions<WaitingQueue>;
using RunningPositions = Positions<RunningBatch>;

}  // namespace slocore::sim
