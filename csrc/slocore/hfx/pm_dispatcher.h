// HFX-PM: the Alg. 2 PriorityMapper in front of the Alg. 1 Dispatcher (Sec. 5.2: "the
// adjusted TTFT and TPOT values are delivered to the SLO-aware scheduler"). The request's
// own SLO is ignored for scheduling (the caller gives only a priority; the simulator still
// scores attainment against the workload's targets). Completions feed the sliding windows.
#pragma once
#include <deque>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "slocore/hfx/dispatcher.h"
#include "slocore/hfx/priority_mapper.h"

namespace slocore::hfx {

// The colocated dispatcher's parameters and the mapper's, in one table.
struct PmParams {
  DispatcherParams dispatcher;
  MapperParams mapper;
  template <class V>
  void visit(V& v) {
    dispatcher.visit(v);
    mapper.visit(v);
  }
};

class PmDispatcher : public GlobalPolicy {
 public:
  explicit PmDispatcher(const PmParams& p);
  std::string name() const override { return "hfx_pm"; }
  ParamMap params() const override;
  void submit(const Request& r, Time now, Time expected_handoff) override;
  std::vector<Assignment> poll(Time now, const std::vector<InstanceView>& views) override;
  Time next_wakeup() const override { return inner_.next_wakeup(); }
  size_t pending() const override { return inner_.pending(); }
  void on_cancelled(Id request, Time now) override;
  void on_token(Id request, Id instance, Tokens generated, Time now) override;
  void on_finished(Id request, Id instance, Time now) override;
  void on_instance_added(Id instance, Role role, Time now) override { inner_.on_instance_added(instance, role, now); }
  void on_instance_removed(Id instance, Time now) override { inner_.on_instance_removed(instance, now); }

  const PriorityMapper& mapper() const { return mapper_; }
  // (id, TTFT, TPOT) assigned to the last kKeepAssigned submitted requests (Fig. 6 dotted lines).
  std::vector<std::tuple<Id, double, double>> assigned() const { return {assigned_.begin(), assigned_.end()}; }
  static constexpr size_t kKeepAssigned = 1 << 20;

 private:
  struct Track {
    int priority = 0;
    Time arrival = 0.0, dispatched = -1.0, first = -1.0;
    Tokens generated = 0;
  };
  Dispatcher inner_;
  PriorityMapper mapper_;
  std::unordered_map<Id, Track> track_;
  std::vector<int64_t> queued_;  // per priority, still in the dispatcher's queue
  std::deque<std::tuple<Id, double, double>> assigned_;
};

}  // namespace slocore::hfx
