// The discrete-event cluster simulator (docs/design.md "The simulator"): deterministic for a
// seed, no Python in the loop. Requests arrive from a sorted trace; global policies place
// them on instances (colocated) or on prefill then decode instances (P/D, with KV transfer);
// each engine runs its local batch scheduler; a scaler may add instances (after a cold
// start), drain and remove them, or switch their role. The recorder keeps every token.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "slocore/core/recorder.h"
#include "slocore/policy/global_policy.h"
#include "slocore/scale/scaler.h"
#include "slocore/sim/engine.h"

namespace slocore::sim {

using SchedulerFactory = std::function<std::shared_ptr<BatchScheduler>()>;

struct SimConfig {
  HardwareProfile profile;  // truth of every engine not given its own below
  // Heterogeneous clusters: one profile per initial instance of a pool (empty: `profile` for
  // each). A pool's first profile is its default for scale-out; a ScaleDecision may name any
  // profile of these lists or of `scale_profiles`.
  std::vector<HardwareProfile> instance_profiles;  // colocated pool
  std::vector<HardwareProfile> prefill_profiles, decode_profiles;
  std::vector<HardwareProfile> scale_profiles;  // further profiles a scaler may add
  // The policies' model: `belief` for every instance when set, else each instance's own
  // truth * belief_scale.
  std::optional<LatencyCoeffs> belief;
  double belief_scale = 1.0;
  double belief_noise = 0.0;  // per-instance belief factor in [1-x, 1+x] (sim/belief_noise.h)
  double noise_sigma = 0.0;   // log-normal noise on iteration times
  bool disaggregated = false;
  int instances = 2;  // colocated pool
  int prefill_instances = 1, decode_instances = 1;
  int max_instances = 0;  // cap on instances for scale-out (0: the initial count)
  int min_instances = 1;  // per pool, for scale-in
  Tokens max_batch_tokens = 8192;
  int max_num_seqs = 256;
  std::shared_ptr<GlobalPolicy> global_policy;   // colocated
  std::shared_ptr<GlobalPolicy> prefill_policy;  // P/D
  std::shared_ptr<GlobalPolicy> decode_policy;   // P/D
  SchedulerFactory batch_scheduler;              // one scheduler per engine
  SchedulerFactory decode_batch_scheduler;       // decode instances (default: batch_scheduler)
  std::shared_ptr<Scaler> scaler;                // optional
  double cold_start_s = 4.14;                    // HFX Table 2, Qwen7B from disk (profiles may override)
  bool prefix_caching = true;                    // vLLM's automatic prefix caching (on by default there)
  double role_switch_s = 0.0;
  bool processor_sharing = false;  // SIBYL decode model on decode instances
  // P/D: when the recorder dates a handed-off request's first token (the metrics' TTFT):
  // false, at the prefill's end, where the prefill instance samples it (DistServe, SIBYL);
  // true, at the decode instance's first step, where a client behind vLLM's P/D proxy
  // protocol (slocore serve's) first sees it, with token 2. The policies' events are the same
  // either way: token 1 at the prefill's end.
  bool pd_first_token_at_decode = false;
  int correction_window = 32;  // belief correction every N iterations (0: off)
  bool online_fit = false;     // refit the belief's coefficients online (core/online_fit.h), not one factor
  double timeline_interval_s = 1.0;
  double max_time = kNever;
  double stall_timeout_s = 600.0;  // no progress for this long (simulated) ends the run as stalled
  uint64_t seed = 0;
  void validate() const;
};

struct TimelinePoint {
  Time t = 0;
  int colocated = 0, prefill = 0, decode = 0, starting = 0;
  int64_t queued = 0;   // pending in global policies
  int64_t waiting = 0;  // waiting in engines
  int64_t running = 0;
};

struct SimStats {
  int64_t events = 0, iterations = 0, preemptions = 0, plan_violations = 0, polls = 0;
  int64_t stalled = 0, rejected_capacity = 0, scale_outs = 0, scale_ins = 0, role_switches = 0;
  int64_t prefix_hit_tokens = 0, prefix_query_tokens = 0;  // prompt tokens from the cache / admitted
  // Iterations an engine computed ahead of the event loop, once nothing else could change it
  // (sim/simulator.cc, "engines run ahead"): how the run was computed, not what it did.
  int64_t steps_ahead = 0;
  int max_instances = 0;
  Time end_time = 0.0;
  std::vector<TimelinePoint> timeline;
};

struct SimResult {
  Recorder recorder;
  SimStats stats;
};

SimResult simulate(const std::vector<Request>& requests, const SimConfig& cfg);

}  // namespace slocore::sim
