// ProServe GoRouting (003_2674c12c132a39ef.txt, Alg. 2 and section 4.3). The router keeps
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
#include <random>
#include <unordered_map>
#include <vector>

#include "slocore/policy/push_policy.h"
#include "slocore/proserve/tdg.h"

namespace slocore::proserve {

struct GoRouteParams {
  std::string mode = "colocated";   // colocated | pd | decode
  double alpha = 0.9;               // candidate threshold on the gain (line 8)
  double mu = 0.25;                 // light load: ESTIMATEEXEC < mu * TTFT (line 10)
  double lambda = 0.75;             // heavy load: ESTIMATEEXEC(p, req) > lambda * TTFT (line 11)
  TdgWeights weights{};
  std::string fallback = "min_exec";  // min_exec | random (line 19)
  bool compensate = true;           // timestamp compensation of PrefillQueueMap
  std::string gain_phi = "a";       // colocated ESTIMATEGAIN: a (Eq. 8, paper) | c (per position, Eq. 9)
  uint64_t seed = 0;
  void validate() const;
};

// The router's view of one instance (PrefillQueueMap entry plus n_d).
struct RouteQueue {
  std::vector<Request> queue;  // dispatched, first token not yet out
  Time ts = 0.0;               // last update of `queue`
  int64_t n_d = 0;             // requests in their decode phase (colocated)
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
  std::unordered_map<Id, Id> placed_on_;  // request -> instance while queued or decoding
  std::unordered_map<Id, bool> decoding_; // request -> counted in n_d
};

}  // namespace slocore::proserve
