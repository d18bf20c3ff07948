// The position of waiting requests in a view's queue, read from its front only as far as the
// lookups need: a scheduler that keeps its order across calls (EDF, MLFQ) looks up the few
// requests its plan reaches, not the whole queue.
#pragma once
#include "slocore/core/id_index.h"
#include "slocore/core/instance_view.h"

namespace slocore {

class LazyWaitingIndex {
 public:
  // Forget the last view's positions (the queue changes between calls).
  void reset() {
    at_.clear(64);
    scanned_ = 0;
  }
  // The waiting request `id` of `v`, or nullptr when it is not in the queue.
  const RequestState* find(const InstanceView& v, Id id) {
    if (const int64_t* k = at_.find(id)) return &v.waiting[size_t(*k)];
    while (scanned_ < v.waiting.size()) {
      const RequestState& s = v.waiting[scanned_];
      at_.insert(s.request.id, int64_t(scanned_++));
      if (s.request.id == id) return &s;
    }
    return nullptr;
  }

 private:
  IdIndex at_;
  size_t scanned_ = 0;
};

}  // namespace slocore
