// SIBYL online survival estimator (SIBYL Sec. 4.2, Eq. 3-4).
// S(l) = P(L > l) is kept at bucket boundaries l in {D, 2D, ..., B*D}; S(l) for l between
// boundaries is the value at the boundary at or below l (step function), S(l < D) = S(0) = 1.
// Each completion with final length L updates EVERY bucket (Eq. 4):
//   S_b <- alpha * S_b + (1 - alpha) * [L >= b*D]
// (every bucket, not only the one L falls in: otherwise the estimate never falls.)
// Stored as S_b = decay * T_b: the global factor takes the alpha part in O(1) and a Fenwick
// range-add of (1-alpha)/decay over the prefix b <= L/D takes the indicator part, so an
// update and a lookup are O(log B).
// `decay` is renormalised (an O(B) rebuild) before it underflows; amortised O(1).
// Before any completion the estimator returns 1 everywhere.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "slocore/core/types.h"

namespace slocore::sibyl {

class SurvivalEstimator {
 public:
  explicit SurvivalEstimator(Tokens bucket = 64, double alpha = 0.99, Tokens max_len = 32768);

  void observe(Tokens final_len);     // Eq. 4, one completion
  double survival(double len) const;  // S^(len), in [0, 1]
  // Eq. 3: P(L > l_to | L > l_from) = S(l_to) / max(S(l_from), 1e-9), capped at 1.
  double conditional(double l_from, double l_to) const;
  // survival()/conditional() for a loop of lookups: prepare() once, then the inline forms.
  void prepare() const {
    if (dirty_) rebuild_cache();
  }
  // The lookup with the table's fields in locals (prepare() first; valid until the next
  // observe()), for a loop of them; survival_prepared is the same lookup. len / bucket, as a
  // product when the bucket is a power of two (then exactly equal), truncated: the bucket at
  // or below len, with no branch on len. cache[0] is S(0) = 1: len < bucket gives x < 1, and
  // a negative len or NaN is clamped to 0 (std::max(0.0, NaN) is 0.0); x then lies in
  // [0, nb], so the signed conversion (one instruction, where size_t's tests for 2^63)
  // truncates it as size_t would.
  struct Table {
    const double* cache;
    double bucket, inv_bucket, nb;
    double operator()(double len) const {
      const double x = inv_bucket > 0 ? len * inv_bucket : len / bucket;  // the test is the same every call
      return cache[int64_t(std::min(std::max(0.0, x), nb))];
    }
  };
  Table table() const { return {cache_.data(), double(bucket_), inv_bucket_, double(nb_)}; }
  double survival_prepared(double len) const { return table()(len); }
  double conditional_prepared(double l_from, double l_to) const {
    return std::min(1.0, survival_prepared(l_to) / std::max(survival_prepared(l_from), 1e-9));
  }
  double bucket_value(int b) const;    // S_b, b in [0, buckets]; b = 0 is S(0) = 1
  std::vector<double> values() const;  // S_0..S_B

  Tokens bucket() const { return bucket_; }
  double alpha() const { return alpha_; }
  int buckets() const { return nb_; }
  int64_t observations() const { return n_; }

 private:
  void add_prefix(int k, double v);  // T_b += v for b in [1, k]
  double point(int b) const;         // T_b
  void renormalise();
  void rebuild_cache() const;

  Tokens bucket_;
  double alpha_;
  int nb_;
  double decay_ = 1.0;
  int64_t n_ = 0;
  std::vector<double> fen_;  // Fenwick tree over the difference array of T, 1-based
  // S_0..S_B materialised for lookups (a decision reads S twice per tracked request);
  // rebuilt in O(B) on the first lookup after an update.
  mutable std::vector<double> cache_;
  double inv_bucket_ = 0.0;  // 1 / bucket when bucket is a power of two, else 0
  mutable bool dirty_ = true;
};

}  // namespace slocore::sibyl
