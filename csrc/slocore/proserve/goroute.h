// ProServe GoRouting (ProServe Alg. 2, Sec. 4.3). The router keeps
// PrefillQueueMap: per instance, the requests dispatched and not yet prefilled, with the
// time ts_p of its last update; the elapsed now - ts_p is subtracted from the estimated
// execution time (timestamp compensation). For a request it estimates, per instance, the
// first-token gain of the queue without and with it (ESTIMATEGAIN, Eq. 3 weights), keeps
// the candidates within alpha of the best gain, and picks by the dual thresholds mu/lambda
// on ESTIMATEEXEC (lines 8-17).
//  mode "pd":        prefill instances, phi_p (each request its own batch), queue in
//                    deadline order (the conservative, request-specific estimate);
//  mode "colocated": phi_a (Eq. 8) with the decode load n_d * b_d added to every batch,
//                    t_budget = min(smallest remaining TTFT in the queue, TPOT SLO);
//  mode "decode":    P/D decode instances: the most free KV blocks (LOADBALANCE, line 20).
// When no instance gains (Delta_max <= 0) the paper picks at random (line 19); the default
// here picks the least ESTIMATEEXEC (fallback = "random" restores the paper's), because
// under overload every request lands in that branch and random placement undoes the
// balancing the rest of the algorithm does.
#pragma once
#include <deque>
#include <memory>
#include <random>
#include <unordered_map>
#include <vector>

#include "slocore/policy/push_policy.h"
#include "slocore/proserve/tdg.h"

namespace slocore::proserve {

enum class GoMode { Colocated, Pd, Decode };
enum class Fallback { MinExec, Random };
inline const EnumNames<GoMode> kGoModes = {
    {"colocated", GoMode::Colocated}, {"pd", GoMode::Pd}, {"decode", GoMode::Decode}};
inline const EnumNames<Fallback> kFallbacks = {{"min_exec", Fallback::MinExec}, {"random", Fallback::Random}};
inline const EnumNames<Phi> kGainPhis = {{"a", Phi::Aggressive}, {"c", Phi::Conservative}};

struct GoRouteParams {
  GoMode mode = GoMode::Colocated;
  double alpha = 0.9;    // candidate threshold on the gain (line 8)
  double mu = 0.25;      // light load: ESTIMATEEXEC < mu * TTFT (line 10)
  double lambda = 0.75;  // heavy load: ESTIMATEEXEC(p, req) > lambda * TTFT (line 11)
  TdgWeights weights{};
  Fallback fallback = Fallback::MinExec;  // line 19
  bool compensate = true;                 // timestamp compensation of PrefillQueueMap
  Phi gain_phi = Phi::Aggressive;         // colocated ESTIMATEGAIN: a (Eq. 8, paper) | c (per position, Eq. 9)
  uint64_t seed = 0;
  template <class V>
  void visit(V& v) {
    v.field("mode", mode, "instances routed: P/D prefill, colocated, or P/D decode (LOADBALANCE)", kGoModes);
    v.field("alpha", alpha, "candidates keep a gain >= alpha * the best (line 8)", Range::closed(0, 1));
    v.field("mu", mu, "light load: ESTIMATEEXEC < mu * TTFT (line 10)", Range::at_least(0));
    v.field("lambda", lambda, "heavy load: ESTIMATEEXEC with the request > lambda * TTFT (line 11); >= mu",
            Range::at_least(0));
    v.field("w_prefill", weights.w_prefill, "Eq. 3 weight w_p of a first token", Range::at_least(0));
    v.field("fallback", fallback, "no instance gains (line 19): least ESTIMATEEXEC, or the paper's random", kFallbacks);
    v.field("compensate", compensate, "subtract the time since a queue's last update (timestamp compensation)");
    v.field("gain_phi", gain_phi, "colocated ESTIMATEGAIN: whole queue at once (Eq. 8) or per position (Eq. 9)",
            kGainPhis);
    v.field("seed", seed, "seed of the random fallback", Range::at_least(0));
  }
  void validate() const;
};

// A queued request as ESTIMATEGAIN reads it: its first-token deadline, its Eq. 3 weight, its
// prompt (and, in the deadline-ordered copy, its prefill cost), its id and its place in the
// queue (seq grows with every request added, so queue order is seq order). Compact, so that
// the per-decision reads of a long queue stay in cache.
struct Queued {
  double deadline;
  double weight;
  Tokens prompt_len;
  double cost = 0.0;
  Id id = 0;
  uint64_t seq = 0;
};

// The prefill-cost coefficients of a LatencyModel: prefill_cost(l, 0) depends on these alone.
struct CostKey {
  double beta = 0.0, a_p = 0.0, b_p = 0.0, c_p = 0.0;
  bool valid = false;
};

// The router's view of one instance (PrefillQueueMap entry plus n_d).
struct RouteQueue {
  // First tokens come mostly near the front (EDF, FCFS engines): deques, where leaving the
  // front of a vector moved the whole queue behind it. An EDF engine's first tokens also
  // come from the middle, so the requests are held by pointer: a removal moves pointers, not
  // requests (in a 100k burst moving them took 7.5% of the run).
  std::deque<std::unique_ptr<const Request>> queue;  // dispatched, first token not yet out
  std::deque<Queued> brief;                          // queue's entries, index for index (kept by GoRoutePolicy)
  struct Entries {
    uint64_t first_seq;  // of its first entry in brief
    size_t count;        // its entries in brief (more than one only for a retried id)
  };
  std::unordered_map<Id, Entries> entries;  // brief's ids, so a first token finds its entry by seq
  Time ts = 0.0;                            // last update of `queue`
  int64_t n_d = 0;                          // requests in their decode phase (colocated)
  // Kept by GoRoutePolicy beside `brief`, so that a decision does not read the whole queue:
  std::vector<Queued> by_deadline;  // brief without NaN deadlines, by (deadline, seq): stable deadline order
  size_t nan_deadlines = 0;         // entries of brief not in by_deadline
  uint64_t next_seq = 0;
  CostKey costed;           // the model by_deadline's costs (and `work`) were computed with
  size_t bad_costs = 0;     // by_deadline costs that are not >= 0
  double work = 0.0;        // sum of the prefill costs in queue order (as the scans add them)
  bool work_valid = false;  // false after a removal: recomputed when read
};

// ESTIMATEEXEC(p[, req]) and ESTIMATEGAIN(Q) for one instance; `extra` is the request being
// placed (nullptr for "without"). Exposed for tests and the benchmark.
double estimate_exec(const GoRouteParams& p, const RouteQueue& q, const LatencyModel& m, const Request* extra,
                     const Request& req, Time now);
double estimate_gain(const GoRouteParams& p, const RouteQueue& q, const LatencyModel& m, const Request* extra,
                     const Request& req, Time now);

class GoRoutePolicy : public PushPolicy {
 public:
  explicit GoRoutePolicy(GoRouteParams p) : p_(std::move(p)), rng_(p_.seed) { p_.validate(); }
  std::string name() const override { return "goroute"; }
  ParamMap params() const override;
  void on_prefill_done(Id request, Id instance, Time now) override;
  void on_token(Id request, Id instance, Tokens generated, Time now) override;
  void on_finished(Id request, Id instance, Time now) override;
  void on_instance_removed(Id instance, Time now) override;
  const RouteQueue* queue_of(Id instance) const;

 protected:
  int choose(const Request& r, Time now, const std::vector<InstanceView>& views) override;

 private:
  void first_token(Id request, Id instance, Time now);
  GoRouteParams p_;
  std::mt19937_64 rng_;
  std::unordered_map<Id, RouteQueue> queues_;
  std::unordered_map<Id, bool> decoding_;  // request -> counted in n_d
  std::vector<Queued> scratch_;            // evaluate() scratch (kept for its storage)
  RouteQueue none_;                        // the queue of an instance nothing was sent to yet
};

}  // namespace slocore::proserve
