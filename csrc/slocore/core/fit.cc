#include "slocore/core/fit.h"

#include <algorithm>
#include <cmath>

#include "slocore/core/errors.h"

namespace slocore {

FitResult fit_relative_least_squares(const std::vector<std::vector<double>>& X, const std::vector<double>& y) {
  const size_t n = X.size();
  require(n > 0 && n == y.size(), "y", "need one target per row and at least one row");
  const size_t k = X[0].size();
  require(k > 0, "X", "rows must have at least one feature");
  require(n >= k, "X",
          "need at least as many rows (" + std::to_string(n) + ") as features (" + std::to_string(k) + ")");
  // A = X / y (row-wise), b = 1: minimising |A theta - 1|^2 is the relative-error problem.
  std::vector<std::vector<double>> A(n, std::vector<double>(k));
  std::vector<double> b(n, 1.0);
  for (size_t i = 0; i < n; ++i) {
    require(X[i].size() == k, "X", "row " + std::to_string(i) + " has a different width");
    require(std::isfinite(y[i]) && y[i] > 0, "y", "row " + std::to_string(i) + " must be finite and > 0");
    for (size_t j = 0; j < k; ++j) {
      require(std::isfinite(X[i][j]), "X", "row " + std::to_string(i) + " is not finite");
      A[i][j] = X[i][j] / y[i];
    }
  }
  // Householder QR: reduce A to upper triangular R while applying the reflections to b.
  for (size_t j = 0; j < k; ++j) {
    double norm = 0.0;
    for (size_t i = j; i < n; ++i) norm += A[i][j] * A[i][j];
    norm = std::sqrt(norm);
    double colmax = 0.0;
    for (size_t i = 0; i < n; ++i) colmax = std::max(colmax, std::abs(A[i][j]));
    require(norm > 1e-12 * std::max(colmax, 1e-300) && norm > 0, "X",
            "features are linearly dependent (column " + std::to_string(j) + ")");
    const double alpha = A[j][j] > 0 ? -norm : norm;
    std::vector<double> v(n - j);
    for (size_t i = j; i < n; ++i) v[i - j] = A[i][j];
    v[0] -= alpha;
    double vnorm2 = 0.0;
    for (double x : v) vnorm2 += x * x;
    if (vnorm2 == 0.0) continue;
    for (size_t c = j; c < k; ++c) {
      double dot = 0.0;
      for (size_t i = j; i < n; ++i) dot += v[i - j] * A[i][c];
      const double f = 2.0 * dot / vnorm2;
      for (size_t i = j; i < n; ++i) A[i][c] -= f * v[i - j];
    }
    double dot = 0.0;
    for (size_t i = j; i < n; ++i) dot += v[i - j] * b[i];
    const double f = 2.0 * dot / vnorm2;
    for (size_t i = j; i < n; ++i) b[i] -= f * v[i - j];
  }
  // Back-substitution R theta = Q^T b.
  FitResult out;
  out.coeffs.assign(k, 0.0);
  for (size_t jj = k; jj-- > 0;) {
    double s = b[jj];
    for (size_t c = jj + 1; c < k; ++c) s -= A[jj][c] * out.coeffs[c];
    require(std::abs(A[jj][jj]) > 1e-300, "X", "features are linearly dependent");
    out.coeffs[jj] = s / A[jj][jj];
  }
  double sq = 0.0;
  for (size_t i = 0; i < n; ++i) {
    double pred = 0.0;
    for (size_t j = 0; j < k; ++j) pred += X[i][j] * out.coeffs[j];
    const double rel = (pred - y[i]) / y[i];
    sq += rel * rel;
    out.max_rel_error = std::max(out.max_rel_error, std::abs(rel));
  }
  out.rms_rel_error = std::sqrt(sq / double(n));
  return out;
}

}  // namespace slocore
