// Least-squares fitting on relative error (HFX appendix A):
// minimise sum_i ((x_i . theta - y_i) / y_i)^2. Rows are scaled by 1/y_i and solved by
// Householder QR, so badly scaled features (l and l^2) stay accurate.
#pragma once
#include <vector>

namespace slocore {

struct FitResult {
  std::vector<double> coeffs;
  double rms_rel_error = 0.0;  // sqrt(mean(((x.theta - y)/y)^2))
  double max_rel_error = 0.0;
};

// X: n rows of k features (n >= k), y: n positive targets. InvalidArgument on bad shapes,
// non-finite values, y <= 0, or a rank-deficient design.
FitResult fit_relative_least_squares(const std::vector<std::vector<double>>& X, const std::vector<double>& y);

}  // namespace slocore
