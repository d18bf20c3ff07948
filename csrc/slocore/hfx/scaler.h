// HFX SLO-aware scaler: HFX Sec. 6 / Alg. 3, with the indicators and defaults of HFX-v2
// Sec. 3.3.3 (the thresholds the papers leave open are fixed below and in docs/design.md):
//  1. rho = R_in / R_out over a 10 s window of arrival and completion times, suppressed
//     until min_samples events. The arrival window is shifted back by the stage's mean
//     latency (EMA of E2E, TTFT or decode time): a completion belongs to an arrival that
//     long ago, so without the shift rho reads > 1 at every ramp-up even with spare capacity
//     (a choice the papers leave open); and until `warmup` seconds after the first arrival (rho > 1.1: scale out; rho <
//     0.7: scale in);
//  2. the SLO-normalised wait, mean over queued requests of (now - arrival) / TTFT
//     (> 0.5: scale out even when rho is moderate);
//  3. each instance's KV load, (used + reserved for its waiting requests) / total: the
//     scale-in victim is the least-loaded instance, drained before it leaves; a pool whose
//     mean KV load exceeds kv_high also scales out (decode pools have no queue to time).
// P/D: each pool is judged on its own stage (prefill: arrivals vs first tokens, waits on
// TTFT; decode: first tokens vs completions, KV load). When one pool wants to shrink and
// the other to grow, the scaler switches a drained instance's role instead (Sec. 6).
// Scale-in also needs no queued request past its TTFT (max normalised wait < 1): a mean
// over a queue of long-TTFT requests can read low while short ones are already late.
// Scale-in needs `in_patience` consecutive low ticks ("a sustained period"), a scale-out on
// rho alone `out_patience` high ticks and some queueing (norm. wait >= rate_wait): over a
// Poisson window with heavy-tailed latencies rho strays past 1.1 with nothing waiting; after a
// scale-out the pool waits `cooldown` seconds (the cold start) before growing again.
// `borrow_spare` (slocore's, not in the papers; off for HFX's own stacks): in P/D a pool that
// wants to grow first takes the least-loaded instance of the other pool when that pool has
// spare capacity (nothing in it wants to grow, its KV load with one instance fewer stays under
// half of kv_high, and for prefill no queued request is past half its TTFT on average nor past
// it at all). HFX switches only when the other pool wants to shrink, which a decode pool never
// signals under a prefill-bound load: its rho (first tokens in vs completions out) stays near 1
// however idle it is. On a fixed instance budget this is the only way the pools can rebalance.
#pragma once
#include <deque>
#include <unordered_map>

#include "slocore/scale/scaler.h"

namespace slocore::hfx {

struct ScalerParams {
  double interval = 1.0;  // tau, s
  double window = 10.0;   // rate window, s
  int min_samples = 20;
  double lag_alpha = 0.1;  // EMA weight of the stage-latency lag
  double warmup = 5.0;     // s of arrivals before rho counts (early completions are the short ones)
  double out_rate = 1.1, in_rate = 0.7;
  double out_wait = 0.5;  // normalised wait
  double kv_high = 0.9;   // mean KV load of a pool
  int in_patience = 3;
  int out_patience = 3;    // consecutive high ticks before a rate-driven scale-out (noise)
  double rate_wait = 0.1;  // rho-driven scale-out also needs this much normalised wait
  double cooldown = 5.0;   // s
  bool role_switch = true;
  bool borrow_spare = false;  // P/D: grow by switching a spare instance of the other pool first
  double forget_s = 600.0;    // a request with no first token after this long is forgotten (lost or
                              // rejected upstream: it must not hold the wait indicator up forever)
  template <class V>
  void visit(V& v) {
    v.field("interval", interval, "decision period tau, s", Range::above(0));
    v.field("window", window, "rate window of indicator 1, s", Range::above(0));
    v.field("min_samples", min_samples, "events in the window before rho counts", Range::at_least(0));
    v.field("lag_alpha", lag_alpha, "EMA weight of the stage-latency lag", Range::open_closed(0, 1));
    v.field("warmup", warmup, "s of arrivals before rho counts", Range::at_least(0));
    v.field("out_rate", out_rate, "rho above this scales out", Range::above(0));
    v.field("in_rate", in_rate, "rho below this scales in (< out_rate)", Range::at_least(0));
    v.field("out_wait", out_wait, "SLO-normalised wait above this scales out", Range::above(0));
    v.field("kv_high", kv_high, "a pool's mean KV load above this scales out", Range::open_closed(0, 1));
    v.field("in_patience", in_patience, "consecutive low ticks before a scale-in", Range::at_least(1));
    v.field("out_patience", out_patience, "consecutive high ticks before a rate-driven scale-out", Range::at_least(1));
    v.field("rate_wait", rate_wait, "normalised wait a rate-driven scale-out also needs", Range::at_least(0));
    v.field("cooldown", cooldown, "s a pool waits after a scale-out (the cold start)", Range::at_least(0));
    v.field("role_switch", role_switch, "P/D: switch a drained instance's role instead of scaling");
    v.field("borrow_spare", borrow_spare, "P/D: a growing pool first takes a spare instance of the other pool");
    v.field("forget_s", forget_s, "s after which a request with no first token is forgotten", Range::above(0));
  }
  void validate() const;
};

// Indicator 3 for one instance.
double kv_load(const InstanceView& v);

class HfxScaler : public Scaler {
 public:
  explicit HfxScaler(ScalerParams p = {});
  std::string name() const override { return "hfx"; }
  ParamMap params() const override;
  Time interval() const override { return p_.interval; }
  void on_arrival(const Request& r, Time now) override;
  void on_first_token(Id request, Time now) override;
  void on_finished(Id request, Time now) override;
  std::vector<ScaleDecision> decide(Time now, const std::vector<InstanceView>& views) override;

  struct Indicators {
    double rate_ratio = 1.0;  // NaN-free: 1 while suppressed
    bool rate_valid = false;
    double norm_wait = 0.0;
    double max_wait = 0.0;  // the largest normalised wait (scale-in only when < 1)
    double kv_mean = 0.0;
  };
  // Indicators of pool `stage` (0 colocated, 1 prefill, 2 decode) as of `now`.
  Indicators indicators(int stage, Time now, const std::vector<InstanceView>& views);

 private:
  struct Pool {
    std::deque<Time> in, out;
    Time first_in = -1.0;  // first arrival ever
    double lag = 0.0;      // EMA of the stage's latency
    bool has_lag = false;
    int low_ticks = 0, high_ticks = 0;
    Time cooldown_until = -1.0;
  };
  void push(std::deque<Time>& q, Time t);
  void observe_lag(Pool& P, double x);
  std::unordered_map<Id, Time> arrival_, decode_start_;
  ScalerParams p_;
  Pool pools_[3];
  struct Waiting {
    Time arrival;
    double ttft;
  };
  std::unordered_map<Id, Waiting> waiting_;  // arrived, no first token yet
  std::unordered_map<Id, bool> decoding_;    // first token seen, not finished
};

}  // namespace slocore::hfx
