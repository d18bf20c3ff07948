// HFX (HyperFlexis) SLO-aware dispatcher, HFX Sec. 5.1, Alg. 1, Eq. 1-2, 5, 7 and
// appendix B; P/D stages from HFX-v2 Sec. 3.3.1.
//  * Q_R: queued requests ordered by (SLO, arrival): TPOT for the colocated dispatcher and
//    the D-stage migrator, TTFT for the P-stage dispatcher (its "priority-ordered queue").
//    A sorted vector; arrivals are buffered and merged in at the next poll, dispatched
//    entries are marked gone and compacted out once they are half the vector.
//  * A request whose TTFT has passed (arrival + TTFT <= now) is "dead": calculate_p is 0 on
//    every instance whose prefill estimate is >= 0, so the P-side scan (MinTree indexes over
//    the queue) skips it and the best-effort pass visits only dead requests short enough for
//    the budget left: the same requests in the same order as a full scan, in
//    O(taken x log n) instead of O(queue) per dispatch once a burst is late.
//  * Q_W: instances in an indexed heap ordered by maturity time (IndexedHeap).
//  * Each poll pops every matured instance, computes its token budget, scans Q_R, admits
//    requests whose admission probability p >= theta and that fit, then re-arms the
//    instance's maturity. Late requests (TTFT already lost, p == 0 or p < theta) are served
//    best-effort from what budget is left; an idle instance always takes one request.
//  * Monitor correction (Alg. 1 RunInBackground): every monitor_interval seconds an idle
//    instance's maturity is pulled back to now (its prediction was pessimistic).
#pragma once
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "slocore/hfx/indexed_heap.h"
#include "slocore/hfx/min_tree.h"
#include "slocore/policy/global_policy.h"

namespace slocore::hfx {

struct DispatcherParams {
  Role role = Role::Colocated;    // colocated dispatcher, P-stage dispatcher, D-stage migrator:
                                  // fixed by the registry name (hfx, hfx_prefill, hfx_migrator)
  double theta = 0.0;             // admission threshold on calculate_p (Alg. 1 line 12)
  double util_exp = 0.0;          // k in p = clamp(slack/TTFT) * (1 - util)^k (our calculate_p)
  double monitor_interval = 1.0;  // s, monitor correction period (paper: 1 s, Sec. 9.3)
  bool best_effort = true;        // serve late requests from leftover budget
  // Eq. 5's "tightest TTFT/TPOT": 0 = the instance's requests and the queue head;
  // > 0 = also every request submitted in the last `tight_window` seconds (the worst-case
  // future arrival of appendix B is of the strictest class seen lately, not the head's).
  double tight_window = 0.0;
  // Alg. 1 token_limit = min(free_token(w), get_ntoken(w)). free_token(w) is read as the free
  // KV tokens, further capped at dispatch_cap x the engine's per-iteration token budget
  // (0: no cap). Without a cap a queue of loose-TTFT requests (WikiSQL, TTFT 20 s: Eq. 5
  // gives ~166k tokens) is committed to the first matured instance while others idle.
  double dispatch_cap = 1.0;
  template <class V>
  void visit(V& v) {
    v.field("theta", theta, "admission threshold on calculate_p (Alg. 1 line 12)", Range::closed(0, 1));
    v.field("util_exp", util_exp, "k in p = clamp(slack / TTFT) * (1 - KV utilisation)^k", Range::at_least(0));
    v.field("monitor_interval", monitor_interval, "monitor correction period, s (Sec. 9.3: 1 s)", Range::above(0));
    v.field("best_effort", best_effort, "serve requests already past their TTFT from leftover budget");
    v.field("tight_window", tight_window,
            "s; > 0: Eq. 5 also takes the tightest SLO submitted this recently (0: instance + queue head)",
            Range::at_least(0));
    v.field("dispatch_cap", dispatch_cap, "token_limit cap, x the engine's per-iteration token budget (0: none)",
            Range::at_least(0));
  }
  void validate() const;
};

// --- Pure formulas (bound to Python; the reference checks them) ---------------------------
// Eq. 5 / appendix B: n_token <= (TTFT*TPOT - TTFT*E_d - a*TPOT) / (b*TPOT). +inf when
// either target is infinite or b == 0; may be negative (no budget).
double token_budget(double ttft, double tpot, double e_d, double a, double b);
// Alg. 1 calculate_p (the paper names it without a formula; ours):
// slack = arrival + TTFT - (now + E_prefill); p = clamp(slack / TTFT, 0, 1) * (1 - util)^k;
// 1 when TTFT is infinite.
double admission_p(Time arrival, double ttft, double prefill_s, Time now, double util, double util_exp);
// Alg. 1 maturity: now + E_p + (E_p / relax) * E_d with relax = min TPOT - E_d; when
// relax <= 0 the instance is over budget and matures after one decode step
// (Alg. 1 divides by relax; a non-positive relax would mean never or the past).
Time maturity_time(Time now, double e_p, double e_d, double min_tpot);

// What the dispatcher derives from one instance view.
struct InstanceLoad {
  double min_ttft = kNever, min_tpot = kNever;    // over running and waiting requests
  double decode_ctx = 0.0;                        // sum of l_cur over decoding requests
  double decode_batch = 0.0;                      // number of decoding requests
  double prefill_tokens = 0.0, prefill_sq = 0.0;  // tokens still to prefill (sum, sum of squares)
  double all_ctx = 0.0, all_batch = 0.0;          // every request's l_cur (running + waiting)
  double kv_free_tokens = 0.0;                    // free KV minus what waiting requests need
  bool idle = true;
};
InstanceLoad instance_load(const InstanceView& v);

class Dispatcher : public GlobalPolicy {
 public:
  explicit Dispatcher(DispatcherParams p = {}, std::string name = "hfx");
  std::string name() const override { return name_; }
  ParamMap params() const override;
  void submit(const Request& r, Time now, Time expected_handoff) override;
  std::vector<Assignment> poll(Time now, const std::vector<InstanceView>& views) override;
  Time next_wakeup() const override;
  size_t pending() const override { return queued() + incoming_.size(); }
  void on_cancelled(Id request, Time now) override;
  void on_instance_added(Id instance, Role role, Time now) override { workers_.set(instance, now); }
  void on_instance_removed(Id instance, Time now) override { workers_.erase(instance); }

  // Introspection for tests and the live router.
  Time maturity(Id instance) const { return workers_.key(instance); }
  const DispatcherParams& config() const { return p_; }
  // Last budget computed per instance (tokens; decode stage: requests), for tests.
  double last_budget(Id instance) const;

 private:
  struct Queued {
    Request req;
    int chain_block_size = 0;     // the block size `chain` was hashed with (0: not yet)
    std::vector<uint64_t> chain;  // prompt_block_hashes(req), kept while queued
  };
  struct Key {
    double slo;
    Time arrival;
    Id id;
    Tokens len = 0;            // prompt length (the scan's fit test without a pointer chase)
    Queued* queued = nullptr;  // into reqs_ (node-based: stable); not part of the order
    bool gone = false;         // dispatched, compacted out later
    bool dead = false;         // arrival + TTFT <= now at some poll (stays so)
    const Request& req() const { return queued->req; }
    bool operator<(const Key& o) const {
      if (slo != o.slo) return slo < o.slo;
      if (arrival != o.arrival) return arrival < o.arrival;
      return id < o.id;
    }
  };
  Key key_of(Queued& q) const;
  void sync(Time now, const std::vector<InstanceView>& views);
  // Admits requests for one matured instance; returns the ids and sets its new maturity.
  std::vector<Id> dispatch_one(Time now, const InstanceView& v);
  // Both return indices into queue_ of the requests to dispatch, in dispatch order.
  std::vector<size_t> dispatch_prefill_like(Time now, const InstanceView& v, const InstanceLoad& L);
  std::vector<size_t> dispatch_decode(Time now, const InstanceView& v, const InstanceLoad& L);
  void merge_incoming();
  // queue_ with lazy removal: gone_ entries are marked, not yet erased.
  size_t queued() const { return queue_.size() - gone_; }
  size_t next_present(size_t i) const;  // first entry at or after i not gone; queue_.size() if none
  void remove(size_t i);                // marks queue_[i] gone (and updates the indexes)
  void compact();                       // erases gone entries
  // The P-side scan's indexes over queue_ positions, rebuilt lazily after the queue moved.
  void refresh_index(Time now);  // rebuilds if stale, then marks requests dead up to now
  static double shortest(const Key& k) { return k.req().prefix.empty() ? double(k.len) : 1.0; }  // <= uncached_len
  size_t gone_ = 0;
  size_t head_ = 0;  // no entry before it is present (a hint, reset when the queue moves)
  bool index_fresh_ = false;
  MinTree alive_;                                // 0 at entries neither gone nor dead
  MinTree dead_;                                 // shortest(k) at dead entries not gone
  MinTree fit_;                                  // D stage: prompt_len + 1 (the KV tokens it needs) at entries not gone
  std::vector<std::pair<Time, size_t>> deaths_;  // (arrival + TTFT, position) of live entries, sorted
  size_t next_death_ = 0;

  DispatcherParams p_;
  Role stage_;  // DispatcherParams::role
  std::string name_;
  std::vector<Key> queue_;     // sorted
  std::vector<Key> incoming_;  // submitted since the last poll, unsorted
  std::unordered_map<Id, Queued> reqs_;
  // Prefix caching: prompt tokens of k that instance v must still compute (its cached prefix
  // subtracted; the prompt chain of each queued request with prefix identity hashed once).
  static double uncached_len(const Key& k, const InstanceView& v);
  IndexedHeap workers_;
  std::unordered_map<Id, double> budget_;
  Time next_monitor_ = 0.0;
  // Monotonic deques (arrival, value) for the minimum TTFT / TPOT over tight_window.
  std::deque<std::pair<Time, double>> recent_ttft_, recent_tpot_;
  double recent_min(std::deque<std::pair<Time, double>>& q, Time now) const;
};

}  // namespace slocore::hfx
