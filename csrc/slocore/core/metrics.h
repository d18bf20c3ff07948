// Metrics, one definition each (docs/design.md "Metrics"), computed from per-token times.
//  TTFT  = t_1 - arrival;  TPOT = (t_n - t_1)/(n - 1), the mean over decode tokens (n >= 2);
//  TBT   = t_i - t_{i-1} for every decode token;  E2E = t_n - arrival.
//  SLO met (ProServe Sec. 5.1: "strictly less"): finished, TTFT < slo.ttft and
//  TPOT < slo.tpot (vacuous for n < 2), and for real-time requests E2E <= deadline.
//  A rejected or unfinished request never meets its SLO.
//  TDG (ProServe Eq. 3): sum_i w_r(i) * [t_i < arrival + TTFT + (i-1)*TPOT] with
//  w_r(1) = w_p*w_prio, w_r(i>1) = w_d*w_prio; ideal gain counts every token the request
//  should produce (its true output length when known, else what it generated).
//  Throughput = output tokens / (last token time - first arrival).
//  Cost (HFX Eq. 3) = active instance-seconds, also in units of `cost_unit_s` (50 ms).
//  Percentiles interpolate linearly between order statistics (numpy's default).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "slocore/core/recorder.h"

namespace slocore {

// Deadline of token i (1-based) of r, absolute time (ProServe Eq. 3): arrival + TTFT + (i-1) * TPOT.
inline double token_deadline(const Request& r, Tokens i) { return r.arrival + r.slo.ttft + double(i - 1) * r.slo.tpot; }

struct MetricsOptions {
  double w_prefill = 1.0;  // TDG w_p
  double w_decode = 1.0;   // TDG w_d
  double cost_unit_s = 0.05;
  std::vector<double> quantiles{0.5, 0.9, 0.99, 0.999};
  // Steady-state runs: requests arriving before warmup_s are left out (instance time is not).
  double warmup_s = 0.0;
  void validate() const;
};

struct RequestMetrics {
  Id id = 0;
  double ttft = kNever;  // +inf when no token came
  double tpot = 0.0;     // 0 when fewer than two tokens
  double e2e = kNever;   // +inf when unfinished
  Tokens tokens = 0;
  bool ttft_met = false, tpot_met = false, deadline_met = false, slo_met = false;
  double tdg = 0.0, tdg_ideal = 0.0;
};

struct Distribution {
  size_t count = 0;
  double mean = 0.0;
  double max = 0.0;
  std::vector<double> quantiles;  // aligned with MetricsOptions::quantiles
};

struct Summary {
  size_t requests = 0, finished = 0, rejected = 0;
  double attainment = 0.0, ttft_attainment = 0.0, tpot_attainment = 0.0;
  Distribution ttft, tpot, tbt, e2e;  // over requests that have the quantity
  int64_t output_tokens = 0;
  double duration_s = 0.0;
  double throughput_tok_s = 0.0;
  double tdg = 0.0, tdg_ideal = 0.0, tdg_ratio = 0.0, miss_tdg_ratio = 0.0;
  double instance_seconds = 0.0, cost_units = 0.0;
  std::map<std::string, double> attainment_by_task;
  std::map<int, double> attainment_by_priority;
  std::map<std::string, size_t> count_by_task;
  std::map<int, size_t> count_by_priority;
};

RequestMetrics request_metrics(const RequestRecord& rec, const MetricsOptions& opt);
Distribution distribution(std::vector<double> values, const std::vector<double>& quantiles);
double quantile_sorted(const std::vector<double>& sorted, double q);
Summary summarize(const Recorder& rec, const MetricsOptions& opt = {});

}  // namespace slocore
