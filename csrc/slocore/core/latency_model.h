// Latency models (one coefficient set serves every paper; docs/design.md):
//  * ProServe per-request model, ProServe Eq. 4-7:
//      T_p(r) = a_p*lq^2 + b_p*lq*lkv + c_p*lq      (Eq. 5, prefill chunk of lq tokens)
//      T_d(r) = a_d*lkv + b_d                        (Eq. 6, one decode token)
//      T(B)   = sum T_p + sum T_d + t_c              (Eq. 7)
//    with the online momentum correction beta <- theta*beta + (1-theta)*mean(real/pred).
//  * HFX / DistServe stage model, HFX Eq. 1-2, is the same model
//    for a prefill from scratch (lkv = 0) and a pure decode batch:
//      E_p = a + b*sum(l) + c*sum(l^2)  with a = t_c, b = c_p, c = a_p
//      E_d = a' + b'*sum(l_cur) + c'*B  with a' = t_c, b' = a_d, c' = b_d
//  * SLICE's l(b) (SLICE Eq. 5/7): a measured decode-latency curve.
//  * SIBYL's TPS(N) = a*N^2 + b*N + c (SIBYL appendix I).
#pragma once
#include <vector>

#include "slocore/core/types.h"

namespace slocore {

struct LatencyCoeffs {
  double t_c = 0.0;       // fixed per-iteration cost, s
  double a_p = 0.0;       // s per (prefill token)^2
  double b_p = 0.0;       // s per (prefill token x cached token)
  double c_p = 0.0;       // s per prefill token
  double a_d = 0.0;       // s per cached token read by one decode
  double b_d = 0.0;       // s per decoding request
  void validate() const;  // all finite and >= 0, else InvalidArgument naming the field
};

// One request's share of an iteration: lq tokens computed now over lkv cached tokens.
struct BatchItem {
  Tokens lq = 1;
  Tokens lkv = 0;
  bool prefill = false;
};

class LatencyModel {
 public:
  LatencyModel() = default;
  explicit LatencyModel(const LatencyCoeffs& c, double theta = 0.9);

  const LatencyCoeffs& coeffs() const { return c_; }
  double theta() const { return theta_; }
  // Multiplies every estimate (1.0 until the first correction).
  double correction() const { return beta_; }

  double prefill_cost(Tokens lq, Tokens lkv) const;  // beta * Eq. 5
  double decode_cost(Tokens lkv) const;              // beta * Eq. 6
  double overhead() const { return beta_ * c_.t_c; }
  double batch_time(const std::vector<BatchItem>& items) const;  // beta * Eq. 7

  // HFX Eq. 1 for a static prefill batch: sum_len = sum(l_in), sum_len_sq = sum(l_in^2).
  double stage_prefill(double sum_len, double sum_len_sq) const;
  // HFX Eq. 2 for a decode batch of `batch` requests whose lengths sum to sum_cur_len.
  double stage_decode(double sum_cur_len, double batch) const;

  // Online correction (ProServe section 4.1): observe() collects real/predicted ratios of
  // finished batches over a window; update() folds their mean into beta with momentum.
  void observe(double real_s, double predicted_s);
  void update();
  void set_correction(double beta);
  // Replaces the coefficients (an online refit, core/online_fit.h); validated as at construction.
  void set_coeffs(const LatencyCoeffs& c);

 private:
  LatencyCoeffs c_{};
  double theta_ = 0.9;
  double beta_ = 1.0;
  double window_sum_ = 0.0;
  int64_t window_n_ = 0;
};

// SLICE l(b): decode latency of a batch of b tasks, piecewise linear through measured
// points (b_i, l_i), extrapolated linearly past the last two points; l(0) = 0.
class BatchLatencyCurve {
 public:
  BatchLatencyCurve() = default;
  BatchLatencyCurve(std::vector<double> batch_sizes, std::vector<double> latencies);
  // The curve a LatencyModel implies for decodes at context length ctx: t_c + b*(a_d*ctx + b_d).
  static BatchLatencyCurve from_model(const LatencyModel& m, Tokens ctx, int max_batch);
  double operator()(double b) const;
  const std::vector<double>& batch_sizes() const { return b_; }
  const std::vector<double>& latencies() const { return l_; }

 private:
  std::vector<double> b_, l_;
};

// SIBYL processor-sharing throughput: TPS(N) = a*N^2 + b*N + c tokens/s for N running
// requests, each decoding at TPS(N)/N (appendix I, Alg. 3 lines 4-5). A concave fit is held
// flat past its vertex (the paper's "plateau"; the parabola's decline lies outside the profiled
// range) and every curve is clamped below at a small positive floor so an instance never stalls.
class ThroughputCurve {
 public:
  ThroughputCurve() = default;
  ThroughputCurve(double a, double b, double c, double floor_tps = 1.0);
  double total(double n) const;
  double per_request(double n) const;  // tokens/s for each of n requests
  double a() const { return a_; }
  double b() const { return b_; }
  double c() const { return c_; }

 private:
  double a_ = 0.0, b_ = 1.0, c_ = 0.0, floor_ = 1.0;
};

}  // namespace slocore
