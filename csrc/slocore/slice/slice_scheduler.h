// SLICE online scheduler (SLICE Alg. 4): on every arrival or departure
// (the engine's task set changes) it re-runs TASKSELECTION (Alg. 2) over all tasks with the
// utility adaptor applied (Alg. 4 line 17; "sjf" lowers the utility of tasks that already
// generated many tokens, SJF-like preemption), rebuilds the decode mask and restarts the
// column scan (Alg. 3). Each iteration decodes the tasks of the current column; selected
// tasks that still need their prefill run it in the same iteration (the paper's
// mask only decodes: a task is prefilled before it joins it). Unselected tasks wait (running ones keep their KV
// and are the first evicted on a KV shortage). l(b) comes from the engine's latency model
// at the tasks' mean context: t_c + b * (a_d * ctx + b_d).
#pragma once
#include <string>
#include <vector>

#include "slocore/batch/plan_builder.h"
#include "slocore/core/id_index.h"
#include "slocore/slice/decode_mask.h"

namespace slocore::slice {

enum class Adaptor { None, Sjf };  // the utility adaptor of Alg. 4 line 17
inline const EnumNames<Adaptor> kAdaptors = {{"none", Adaptor::None}, {"sjf", Adaptor::Sjf}};

struct SliceParams {
  double max_cycle = 1.0;  // s; a cycle must stay below it (Alg. 2 line 13)
  bool spread = false;     // spread each row's ones evenly over the cycle
  Adaptor adaptor = Adaptor::None;
  double sjf_tokens = 64.0;  // sjf: U' = U / (1 + generated / sjf_tokens)
  // Demote (x 1e-3, never drop) a real-time task that can no longer meet its end-to-end
  // deadline even at its full rate: now + tokens left * TPOT > arrival + deadline.
  bool demote_late = false;
  template <class V>
  void visit(V& v) {
    v.field("max_cycle", max_cycle, "longest decode-mask cycle, s (Alg. 2 line 13)", Range::above(0));
    v.field("spread", spread, "spread each row's ones evenly over the cycle");
    v.field("adaptor", adaptor, "utility adaptor (Alg. 4 line 17): none, or sjf U / (1 + generated / sjf_tokens)",
            kAdaptors);
    v.field("sjf_tokens", sjf_tokens, "tokens that halve a task's utility under the sjf adaptor", Range::above(0));
    v.field("demote_late", demote_late, "demote (x 1e-3) a real-time task that can no longer meet its deadline");
  }
  void validate() const;
};

// The utility the selection uses for s (the pluggable adaptor of Alg. 4 line 17).
double adapted_utility(const RequestState& s, const SliceParams& p, Time now);

class SliceScheduler : public BatchScheduler {
 public:
  explicit SliceScheduler(SliceParams p) : p_(std::move(p)) { p_.validate(); }
  std::string name() const override { return "slice"; }
  ParamMap params() const override;
  BatchPlan schedule(const InstanceView& v, Time now) override;

  const std::vector<Id>& selected() const { return selected_; }
  int64_t reschedules() const { return reschedules_; }

 private:
  void reschedule(const InstanceView& v, Time now);
  void locate(const InstanceView& v);  // at_ for selected_

  SliceParams p_;
  std::vector<Id> known_;     // sorted ids of the task set at the last selection
  std::vector<Id> selected_;  // selection order
  DecodeMask mask_;           // rows over selected_ positions
  int col_ = 0;
  int64_t reschedules_ = 0;
  bool dups_ = false;                     // known_ holds an id twice
  std::vector<Id> seq_;                   // the ids in view order at the last call (sorted: known_)
  std::vector<Id> ids_;                   // schedule() scratch: this call's ids in view order
  std::vector<Id> sorted_;                // schedule() scratch: ids_ sorted
  std::vector<Candidate> at_;             // where each selected_ task is this call (s null: not on the instance)
  IdIndex where_;                         // locate() scratch
  std::vector<size_t> repeats_;           // locate() scratch: positions of selected ids named before
  std::vector<const RequestState*> all_;  // reschedule() scratch
  std::vector<SliceTask> tasks_;          // reschedule() scratch
};

}  // namespace slocore::slice
