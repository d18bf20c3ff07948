// HFX priority-to-SLO mapping, HFX Sec. 5.2, Alg. 2, Eq. 6.
//  * Sliding windows of the last W completed requests' TTFT (with their queue time) and
//    TPOT, kept sorted; C_i counts the window's requests of priority i.
//  * Eq. 6: index = sum_{i<p} C_i + floor((p+1)/(N+1) * C_p) into the sorted windows.
//  * Queue-time correction: ttft -= q_time(reference) - last_queue_time[p], where
//    last_queue_time[p] is the queue time of the latest dispatched request of priority p
//    (the text's "most recent request of the same priority"; Alg. 2 instead overwrites it
//    with the reference's, which makes the correction a difference of two references).
//  * Clamp (Alg. 2): with higher-priority requests pending, to [min(p), max(p)];
//    otherwise to [relaxed_min * min(p), max(p)]. The paper clamps to the maximum only
//    (relaxed_min = 0); that lets a lone low priority collapse to near-zero targets, which
//    then starve it in the (TPOT, arrival)-ordered queue once others arrive, so the default
//    keeps half the lower bound. Ranges default to Table 1 medians +-25% (Sec. 7.3).
#pragma once
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "slocore/core/params.h"
#include "slocore/core/types.h"

namespace slocore::hfx {

struct MapperParams {
  int window = 200;
  // Per-priority median targets, priority 0 first (4-task set of Table 1 by default).
  std::vector<double> ttft_base = {0.7, 1.0, 2.0, 20.0};
  std::vector<double> tpot_base = {0.5, 0.7, 0.9, 1.0};
  double spread = 0.25;      // range = base * (1 -+ spread)
  double relaxed_min = 0.5;  // lower bound factor when no higher priority is pending
  bool queue_correction = true;
  int levels() const { return int(ttft_base.size()); }
  template <class V>
  void visit(V& v) {
    v.field("window", window, "completed requests in the sliding windows (W)", Range::at_least(1));
    v.field("ttft_base", ttft_base, "median TTFT per priority, s, priority 0 first ('0.7,1,2,20')", Range::above(0));
    v.field("tpot_base", tpot_base, "median TPOT per priority, s, one per ttft_base entry", Range::above(0));
    v.field("spread", spread, "each priority's range is base * (1 -+ spread)", Range::closed_open(0, 1));
    v.field("relaxed_min", relaxed_min, "lower-bound factor when no higher priority is pending", Range::closed(0, 1));
    v.field("queue_correction", queue_correction, "subtract the queue-time difference from the mapped TTFT");
  }
  void validate() const;
};

class PriorityMapper {
 public:
  explicit PriorityMapper(MapperParams p = {});
  const MapperParams& config() const { return p_; }
  // Alg. 2: (TTFT, TPOT) for a new request of `priority`.
  std::pair<double, double> map(int priority, bool higher_pending) const;
  // Eq. 6 index into the sorted windows (clamped to the window), -1 when empty.
  int64_t index(int priority) const;
  void record(int priority, double ttft, double queue_time, double tpot);  // a completed request
  void on_dispatch(int priority, double queue_time);                       // last_queue_time[p]
  std::vector<int64_t> counts() const { return counts_; }
  size_t size() const { return fifo_.size(); }
  std::pair<double, double> bounds_ttft(int priority) const;
  std::pair<double, double> bounds_tpot(int priority) const;

 private:
  void check(int priority) const;
  struct Entry {
    int priority;
    double ttft, qtime, tpot;
  };
  MapperParams p_;
  std::deque<Entry> fifo_;
  std::vector<std::pair<double, double>> ttft_sorted_;  // (ttft, queue time)
  std::vector<double> tpot_sorted_;
  std::vector<int64_t> counts_;
  std::vector<double> last_q_;
  std::vector<bool> has_last_q_;
};

}  // namespace slocore::hfx
