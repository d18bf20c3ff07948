#include "slocore/sibyl/survival.h"

#include <algorithm>
#include <cmath>

#include "slocore/core/errors.h"
#include "slocore/core/input_checks.h"

namespace slocore::sibyl {

SurvivalEstimator::SurvivalEstimator(Tokens bucket, double alpha, Tokens max_len) : bucket_(bucket), alpha_(alpha) {
  require(bucket >= 1, "bucket", "must be >= 1 token, got " + std::to_string(bucket));
  require(std::isfinite(alpha) && alpha > 0 && alpha < 1, "alpha", "must be in (0, 1), got " + std::to_string(alpha));
  require(max_len >= bucket && max_len <= (Tokens(1) << 30), "max_len",
          "must be in [bucket, 2^30], got " + std::to_string(max_len));
  require((max_len + bucket - 1) / bucket <= kMaxSurvivalBuckets, "max_len",
          "max_len / bucket must be at most " + std::to_string(kMaxSurvivalBuckets) + " buckets");
  nb_ = int((max_len + bucket - 1) / bucket);
  if ((bucket & (bucket - 1)) == 0) inv_bucket_ = 1.0 / double(bucket);
  fen_.assign(size_t(nb_) + 2, 0.0);
  add_prefix(nb_, 1.0);  // S_b = 1 before any completion
}

void SurvivalEstimator::add_prefix(int k, double v) {
  if (k < 1) return;
  for (int i = 1; i <= nb_ + 1; i += i & -i) fen_[size_t(i)] += v;
  for (int i = k + 1; i <= nb_ + 1; i += i & -i) fen_[size_t(i)] -= v;
}

double SurvivalEstimator::point(int b) const {
  double s = 0.0;
  for (int i = b; i > 0; i -= i & -i) s += fen_[size_t(i)];
  return s;
}

void SurvivalEstimator::renormalise() {
  std::vector<double> v(size_t(nb_) + 1);
  for (int b = 1; b <= nb_; ++b) v[size_t(b)] = decay_ * point(b);
  std::fill(fen_.begin(), fen_.end(), 0.0);
  decay_ = 1.0;
  // Rebuild from the difference array d_b = v_b - v_{b-1} in O(B log B).
  for (int b = 1; b <= nb_; ++b) {
    const double d = v[size_t(b)] - (b > 1 ? v[size_t(b) - 1] : 0.0);
    for (int i = b; i <= nb_ + 1; i += i & -i) fen_[size_t(i)] += d;
  }
}

void SurvivalEstimator::observe(Tokens final_len) {
  if (final_len < 0) fail("final_len", "must be >= 0, got " + std::to_string(final_len));
  decay_ *= alpha_;                                               // every bucket: alpha * S_b
  const int k = int(std::min<Tokens>(final_len / bucket_, nb_));  // buckets with L >= b*D
  add_prefix(k, (1.0 - alpha_) / decay_);                         // + (1 - alpha) * indicator
  ++n_;
  dirty_ = true;
  if (decay_ < 1e-100) renormalise();
}

double SurvivalEstimator::bucket_value(int b) const {
  if (b <= 0) return 1.0;
  b = std::min(b, nb_);
  return std::clamp(decay_ * point(b), 0.0, 1.0);
}

void SurvivalEstimator::rebuild_cache() const {
  cache_.resize(size_t(nb_) + 1);
  for (int b = 0; b <= nb_; ++b) cache_[size_t(b)] = bucket_value(b);
  dirty_ = false;
}

double SurvivalEstimator::survival(double len) const {
  prepare();
  return survival_prepared(len);
}

double SurvivalEstimator::conditional(double l_from, double l_to) const {
  prepare();
  return conditional_prepared(l_from, l_to);
}

std::vector<double> SurvivalEstimator::values() const {
  std::vector<double> v(size_t(nb_) + 1);
  for (int b = 0; b <= nb_; ++b) v[size_t(b)] = bucket_value(b);
  return v;
}

}  // namespace slocore::sibyl
