// Online refit of the latency model's coefficients from the iterations an engine runs.
//
// ProServe's correction (Sec. 4.1) rescales the whole belief by one factor, which cannot
// repair a belief of the wrong *shape* (e.g. another GPU's profile: decode KV reads cost
// 3.5x too much relative to everything else). Each finished iteration is one observation of
// Eq. 7: its time y against the features x = (1, sum lq^2, sum lq*lkv, sum lq | prefills,
// sum lkv, n | decodes) that the six coefficients multiply. In units of the prior belief p
// (c_k = p_k * u_k; z_k = x_k * p_k / y, each term's predicted share of the real time), the
// relative error of Eq. 7 is z.u - 1 (HFX appendix A's relative least squares), and
//
//   u = argmin_{u >= 0}  sum_i w_i (z_i.u - 1)^2 + ridge * |u - beta* 1|^2
//
// with w_i = forget^(age of i) and beta* the best single factor (ProServe's correction fitted
// on the same data): directions the iterations do not identify (e.g. lq^2 against lq when
// every chunk has the same size) stay at the scaled prior. A coefficient whose prior is 0
// stays 0. Non-negativity by an active set: a negative u_k is fixed at 0 and the rest solved
// again (at most six passes). The 6x6 systems are solved by Cholesky (SPD by the ridge).
#pragma once
#include <array>

#include "slocore/core/latency_model.h"

namespace slocore {

class OnlineFit {
 public:
  static constexpr int K = 6;  // t_c, a_p, b_p, c_p, a_d, b_d
  using Vec = std::array<double, K>;

  // forget in (0, 1]: the weight of an observation decays by it per later observation;
  // ridge > 0: the prior's weight, in observations at 100 % deviation of every coefficient
  // (0.1: a tenth of one iteration, only there to pin what the iterations do not identify).
  explicit OnlineFit(const LatencyCoeffs& prior, double forget = 0.997, double ridge = 0.1);

  // The features of one iteration (what Eq. 7's coefficients multiply).
  static Vec features(const std::vector<BatchItem>& items);
  // One iteration that took real_s seconds (finite, > 0); ignored when the prior predicts 0.
  void observe(const Vec& x, double real_s);
  // The coefficients that fit the observations so far (the prior before any).
  LatencyCoeffs solve() const;

  double observations() const { return n_eff_; }  // the sum of the weights

 private:
  Vec p_{};  // the prior, coefficient by coefficient
  double forget_, ridge_;
  std::array<double, K * K> A_{};  // sum w z z^T
  Vec b_{};                        // sum w z
  double n_eff_ = 0.0;
};

}  // namespace slocore
