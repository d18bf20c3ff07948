#include "slocore/core/online_fit.h"

#include <cmath>

#include "slocore/core/errors.h"

namespace slocore {
namespace {

constexpr int K = OnlineFit::K;

OnlineFit::Vec to_vec(const LatencyCoeffs& c) { return {c.t_c, c.a_p, c.b_p, c.c_p, c.a_d, c.b_d}; }

// Solves M u = r in place for the free coordinates (Cholesky; M is SPD on them).
void cholesky_solve(std::array<double, K * K> M, OnlineFit::Vec& r, const std::array<bool, K>& free) {
  int idx[K], n = 0;
  for (int k = 0; k < K; ++k)
    if (free[k]) idx[n++] = k;
  double L[K][K] = {}, y[K] = {};
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j <= i; ++j) {
      double s = M[idx[i] * K + idx[j]];
      for (int k = 0; k < j; ++k) s -= L[i][k] * L[j][k];
      L[i][j] = i == j ? std::sqrt(s) : s / L[j][j];
    }
  }
  for (int i = 0; i < n; ++i) {
    double s = r[idx[i]];
    for (int k = 0; k < i; ++k) s -= L[i][k] * y[k];
    y[i] = s / L[i][i];
  }
  for (int i = n - 1; i >= 0; --i) {
    double s = y[i];
    for (int k = i + 1; k < n; ++k) s -= L[k][i] * y[k];
    y[i] = s / L[i][i];
  }
  for (int i = 0; i < n; ++i) r[idx[i]] = y[i];
}

}  // namespace

OnlineFit::OnlineFit(const LatencyCoeffs& prior, double forget, double ridge)
    : p_(to_vec(prior)), forget_(forget), ridge_(ridge) {
  prior.validate();
  require(std::isfinite(forget) && forget > 0.0 && forget <= 1.0, "forget", "must be in (0, 1]");
  require(std::isfinite(ridge) && ridge > 0.0, "ridge", "must be finite and > 0");
}

OnlineFit::Vec OnlineFit::features(const std::vector<BatchItem>& items) {
  Vec x{1.0, 0.0, 0.0, 0.0, 0.0, 0.0};
  for (const BatchItem& it : items) {
    const double q = double(it.lq), kv = double(it.lkv);
    if (it.prefill) {
      x[1] += q * q;
      x[2] += q * kv;
      x[3] += q;
    } else {
      x[4] += kv;
      x[5] += 1.0;
    }
  }
  return x;
}

void OnlineFit::observe(const Vec& x, double real_s) {
  require(std::isfinite(real_s) && real_s > 0, "real_s", "must be finite and > 0");
  Vec z{};
  double pred = 0.0;
  for (int k = 0; k < K; ++k) {
    z[k] = x[k] * p_[k] / real_s;
    pred += z[k];
  }
  if (!(pred > 0.0) || !std::isfinite(pred)) return;
  for (double& a : A_) a *= forget_;
  for (double& v : b_) v *= forget_;
  n_eff_ = n_eff_ * forget_ + 1.0;
  for (int i = 0; i < K; ++i) {
    b_[i] += z[i];
    for (int j = 0; j < K; ++j) A_[i * K + j] += z[i] * z[j];
  }
}

LatencyCoeffs OnlineFit::solve() const {
  // beta*: the single factor minimising sum w (beta * sum_k z_k - 1)^2.
  double num = 0.0, den = 0.0;
  for (int i = 0; i < K; ++i) {
    num += b_[i];
    for (int j = 0; j < K; ++j) den += A_[i * K + j];
  }
  const double beta = den > 0.0 ? num / den : 1.0;
  std::array<double, K* K> M = A_;
  Vec r = b_;
  for (int k = 0; k < K; ++k) {
    M[k * K + k] += ridge_;
    r[k] += ridge_ * beta;
  }
  std::array<bool, K> free{};
  for (int k = 0; k < K; ++k) free[k] = p_[k] > 0.0;  // a zero prior stays zero
  Vec u{};
  for (int pass = 0; pass <= K; ++pass) {
    u = r;
    cholesky_solve(M, u, free);
    bool changed = false;
    for (int k = 0; k < K; ++k)
      if (free[k] && !(u[k] > 0.0)) free[k] = false, changed = true;
    if (!changed) break;
  }
  bool any = false;
  for (int k = 0; k < K; ++k) any = any || free[k];
  Vec c{};
  for (int k = 0; k < K; ++k) c[k] = !any ? p_[k] * (beta > 0.0 ? beta : 1.0) : free[k] ? p_[k] * u[k] : 0.0;
  return LatencyCoeffs{c[0], c[1], c[2], c[3], c[4], c[5]};
}

}  // namespace slocore
