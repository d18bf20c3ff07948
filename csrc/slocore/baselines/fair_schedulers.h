// Fairness / preemptive baselines (one paragraph each in docs/baselines.md).
//  weighted_vtc  Virtual Token Counter (Sheng et al., "Fairness in Serving Large Language
//                Models", OSDI'24) with per-class weights, ProServe's Weighted VTC baseline:
//                a client is a priority class; its counter grows by
//                (w_in * prompt tokens + w_out * output tokens) / priority_weight as it is
//                served. Running decodes go first (decode-first, token budget); then waiting
//                prompts of the client with the smallest counter, FCFS within a client. A
//                client that becomes active is lifted to the smallest active counter (VTC's
//                counter lift, so idle time earns no credit).
//  mlfq          FastServe-style skip-join multi-level feedback queue (Wu et al., 2023):
//                level i has quantum base_quantum_s * 2^i of estimated service; a new request
//                joins the first level whose quantum covers its prefill (skip-join); a request
//                that used its quantum drops one level; one waiting longer than
//                promote_after_s returns to level 0 (starvation guard). Each iteration runs the
//                highest levels first; running requests not chosen keep their KV (FastServe
//                keeps or swaps it, never recomputes) and lower levels are preempted for KV.
#pragma once
#include <map>
#include <set>
#include <unordered_map>

#include "slocore/batch/kept_order.h"
#include "slocore/batch/plan_builder.h"
#include "slocore/batch/waiting_index.h"
#include "slocore/core/id_index.h"

namespace slocore {

struct VtcParams {
  Tokens token_budget = 512;
  double w_in = 1.0;   // weight of a prompt token
  double w_out = 2.0;  // weight of an output token (VTC's default 1:2)
  template <class V>
  void visit(V& v) {
    v.field("token_budget", token_budget, "tokens per iteration (prefill chunks + decodes)", Range::at_least(1));
    v.field("w_in", w_in, "counter weight of a prompt token", Range::above(0));
    v.field("w_out", w_out, "counter weight of an output token (VTC's 1:2)", Range::above(0));
  }
};

class WeightedVtcScheduler : public BatchScheduler {
 public:
  explicit WeightedVtcScheduler(VtcParams p) : p_(p) { check_params(p_, name()); }
  std::string name() const override { return "weighted_vtc"; }
  ParamMap params() const override;
  BatchPlan schedule(const InstanceView& v, Time now) override;
  // Counter of a client (priority class); 0 for one never seen.
  double counter(int client) const;

 private:
  void charge(const RequestState& s, Tokens k);
  VtcParams p_;
  std::map<int, double> counter_;
  std::set<int> active_;  // clients with running or waiting requests at the last call
};

struct MlfqParams {
  int levels = 6;
  double base_quantum_s = 0.02;  // level-0 quantum: about one decode iteration
  double promote_after_s = 2.0;  // starvation guard
  template <class V>
  void visit(V& v) {
    v.field("levels", levels, "queue levels; level i has quantum base_quantum_s * 2^i", Range::closed(1, 32));
    v.field("base_quantum_s", base_quantum_s, "level-0 quantum of estimated service, s", Range::above(0));
    v.field("promote_after_s", promote_after_s, "a request waiting this long returns to level 0, s", Range::above(0));
  }
};

class MlfqScheduler : public BatchScheduler {
 public:
  explicit MlfqScheduler(MlfqParams p) : p_(p) { check_params(p_, name()); }
  std::string name() const override { return "mlfq"; }
  ParamMap params() const override;
  BatchPlan schedule(const InstanceView& v, Time now) override;
  void on_finished(Id request, Time now) override;
  // Current level of a request (-1 if unknown).
  int level(Id request) const;

 private:
  struct State {
    int level = 0;
    double served = 0.0;    // estimated service at this level, s
    double last_run = 0.0;  // when it last ran (or arrived)
    // The kept order (below): the request's arrival, whether it is on the instance (and
    // running there) as of the last call, whether the guard heap holds an entry for it.
    Time arrival = 0.0;
    bool present = false, running = false, in_heap = false;
    uint64_t seen = 0;  // the call that last found it running
  };
  // (level, arrival, id): the schedule order, the id standing in for the position only
  // where no two requests share (level, arrival) (checked; else the full sort).
  struct Key {
    int level;
    Time arrival;
    Id id;
    bool operator<(const Key& o) const {
      if (level != o.level) return level < o.level;
      if (arrival != o.arrival) return arrival < o.arrival;
      return id < o.id;
    }
    bool same_rank(const Key& o) const { return level == o.level && arrival == o.arrival; }
  };
  State& state_of(const RequestState& s, const InstanceView& v, Time now);
  // Every request's state (skip-join, guard) and one sort of all of them, each call.
  BatchPlan plan_full(const InstanceView& v, Time now);
  // The kept order: only what changed since the last call is read (see schedule()).
  bool sync(const InstanceView& v, Time now);
  void rebuild(const InstanceView& v, Time now);
  void track(Id id, State& st, bool running);
  void watch(Id id, State& st);
  void guard(Time now);
  bool plan_kept(const InstanceView& v, BatchPlan& plan);
  void account(const InstanceView& v, const BatchPlan& plan, Time now);
  static bool trivial(const State& st) { return st.level == 0 && st.served == 0.0; }

  MlfqParams p_;
  std::unordered_map<Id, State> state_;
  // schedule() scratch, kept for its storage: candidates by (level, arrival); a plan item's
  // index by request id; each plan item's request.
  std::vector<std::pair<std::pair<int, Time>, Candidate>> sorted_;
  IdIndex item_of_;
  std::vector<const RequestState*> state_at_;
  // The kept order: every request on the instance by Key, kept across calls of one engine
  // (a view with an epoch); a min-heap of (last_run, id) over the states the starvation
  // guard can change (any but level 0 with nothing served: the guard's reset leaves such a
  // state as it is); the running ids of the last call; how many waiting requests it knows.
  std::set<Key> order_;
  std::vector<std::pair<Time, Id>> heap_;
  std::vector<Id> last_running_;
  std::vector<State*> run_state_;
  size_t waiting_known_ = 0;
  bool synced_ = false, never_kept_ = false;
  EngineCalls calls_;
  std::vector<std::pair<Key, size_t>> run_keys_;
  std::vector<size_t> victims_;
  IdIndex running_at_;
  LazyWaitingIndex waiting_;
};

}  // namespace slocore
