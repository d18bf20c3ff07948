#include "slocore/core/latency_model.h"

#include <algorithm>
#include <cmath>

#include "slocore/core/errors.h"

namespace slocore {

void LatencyCoeffs::validate() const {
  require_nonneg(t_c, "t_c");
  require_nonneg(a_p, "a_p");
  require_nonneg(b_p, "b_p");
  require_nonneg(c_p, "c_p");
  require_nonneg(a_d, "a_d");
  require_nonneg(b_d, "b_d");
}

LatencyModel::LatencyModel(const LatencyCoeffs& c, double theta) : c_(c), theta_(theta) {
  c_.validate();
  require(theta >= 0.0 && theta <= 1.0, "theta", "must be in [0, 1]");
}

double LatencyModel::prefill_cost(Tokens lq, Tokens lkv) const {
  const double q = double(lq), kv = double(lkv);
  return beta_ * (c_.a_p * q * q + c_.b_p * q * kv + c_.c_p * q);
}

double LatencyModel::decode_cost(Tokens lkv) const { return beta_ * (c_.a_d * double(lkv) + c_.b_d); }

double LatencyModel::batch_time(const std::vector<BatchItem>& items) const {
  double t = c_.t_c;
  for (const BatchItem& it : items) {
    const double q = double(it.lq), kv = double(it.lkv);
    t += it.prefill ? c_.a_p * q * q + c_.b_p * q * kv + c_.c_p * q : c_.a_d * kv + c_.b_d;
  }
  return beta_ * t;
}

double LatencyModel::stage_prefill(double sum_len, double sum_len_sq) const {
  return beta_ * (c_.t_c + c_.c_p * sum_len + c_.a_p * sum_len_sq);
}

double LatencyModel::stage_decode(double sum_cur_len, double batch) const {
  return beta_ * (c_.t_c + c_.a_d * sum_cur_len + c_.b_d * batch);
}

void LatencyModel::observe(double real_s, double predicted_s) {
  require(std::isfinite(real_s) && real_s > 0, "real_s", "must be finite and > 0");
  require(std::isfinite(predicted_s) && predicted_s > 0, "predicted_s", "must be finite and > 0");
  window_sum_ += real_s / predicted_s;
  ++window_n_;
}

void LatencyModel::update() {
  if (window_n_ == 0) return;
  beta_ = theta_ * beta_ + (1.0 - theta_) * (window_sum_ / double(window_n_)) * beta_;
  window_sum_ = 0.0;
  window_n_ = 0;
}

void LatencyModel::set_coeffs(const LatencyCoeffs& c) {
  c.validate();
  c_ = c;
}

void LatencyModel::set_correction(double beta) {
  require(std::isfinite(beta) && beta > 0, "beta", "must be finite and > 0");
  beta_ = beta;
}

BatchLatencyCurve::BatchLatencyCurve(std::vector<double> batch_sizes, std::vector<double> latencies)
    : b_(std::move(batch_sizes)), l_(std::move(latencies)) {
  require(!b_.empty() && b_.size() == l_.size(), "latencies", "need one latency per batch size and at least one point");
  for (size_t i = 0; i < b_.size(); ++i) {
    require(std::isfinite(b_[i]) && b_[i] > 0, "batch_sizes", "must be finite and > 0");
    require(i == 0 || b_[i] > b_[i - 1], "batch_sizes", "must be strictly increasing");
    require(std::isfinite(l_[i]) && l_[i] > 0, "latencies", "must be finite and > 0");
  }
}

BatchLatencyCurve BatchLatencyCurve::from_model(const LatencyModel& m, Tokens ctx, int max_batch) {
  require(max_batch >= 1, "max_batch", "must be >= 1");
  std::vector<double> b, l;
  for (int i = 1; i <= max_batch; ++i) {
    b.push_back(i);
    l.push_back(m.overhead() + i * m.decode_cost(ctx));
  }
  if (max_batch == 1) {  // two points are needed to extrapolate
    b.push_back(2);
    l.push_back(m.overhead() + 2 * m.decode_cost(ctx));
  }
  return BatchLatencyCurve(std::move(b), std::move(l));
}

double BatchLatencyCurve::operator()(double b) const {
  if (b <= 0 || b_.empty()) return 0.0;
  if (b_.size() == 1) return l_[0] * b / b_[0];
  if (b <= b_[0]) return l_[0];  // a batch never costs less than the smallest measured one
  size_t hi = std::lower_bound(b_.begin(), b_.end(), b) - b_.begin();
  if (hi >= b_.size()) hi = b_.size() - 1;
  const size_t lo = hi - 1;
  const double slope = (l_[hi] - l_[lo]) / (b_[hi] - b_[lo]);
  return std::max(l_[lo] + slope * (b - b_[lo]), 1e-12);
}

ThroughputCurve::ThroughputCurve(double a, double b, double c, double floor_tps)
    : a_(a), b_(b), c_(c), floor_(floor_tps) {
  require_finite(a, "a");
  require_finite(b, "b");
  require_finite(c, "c");
  require_positive(floor_tps, "floor_tps");
}

double ThroughputCurve::total(double n) const {
  if (n <= 0) return 0.0;
  // Past the vertex of a concave fit the curve plateaus (SIBYL appendix I: throughput "scales
  // linearly with batch size before plateauing due to memory bandwidth saturation"); the
  // fitted quadratic's decline beyond its profiled range is not extrapolated.
  if (a_ < 0) n = std::min(n, -b_ / (2 * a_));
  return std::max(a_ * n * n + b_ * n + c_, floor_);
}

double ThroughputCurve::per_request(double n) const { return n <= 0 ? 0.0 : total(n) / n; }

}  // namespace slocore
