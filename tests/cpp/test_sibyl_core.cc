// SIBYL core without Python: the O(log B) survival estimator against the O(B) EMA of Eq. 4
// over a long run (the global decay is renormalised many times), and the Alg. 1 argmin.
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "slocore/core/errors.h"
#include "slocore/sibyl/projected_load.h"

#include "check.h"

using namespace slocore;
using namespace slocore::sibyl;

int main() {
  SurvivalEstimator est(64, 0.99, 8192);
  std::vector<double> naive(size_t(est.buckets()) + 1, 1.0);
  std::mt19937_64 rng(1);
  std::uniform_int_distribution<int> len(0, 9000);
  double worst = 0;
  for (int i = 0; i < 100000; ++i) {  // decay 0.99^100000: renormalised ~44 times
    const int L = len(rng);
    est.observe(L);
    for (int b = 1; b <= est.buckets(); ++b) naive[size_t(b)] = 0.99 * naive[size_t(b)] + 0.01 * (L >= b * 64);
    if (i % 997 == 0)
      for (int b = 0; b <= est.buckets(); ++b)
        worst = std::max(worst, std::fabs(est.bucket_value(b) - naive[size_t(b)]));
  }
  CHECK(worst < 1e-9);
  CHECK(est.survival(10) == 1.0);
  CHECK(std::fabs(est.survival(4096) - naive[64]) < 1e-9);

  ProjectedLoad p;  // two instances: 0 holds a long active request, 1 a pending shadow
  p.assign(1, 0, 1000, 0.0);
  p.token(1, 1, 0.0);
  p.token(1, 101, 4.0);
  p.assign(2, 1, 200, 1.0);
  std::vector<double> loads;
  CHECK(p.argmin({0, 1}, 4.0, 5.0, &loads) == 1);
  CHECK(loads[0] > loads[1]);
  bool threw = false;
  try {
    p.token(99, 1, 0.0);
  } catch (const UnknownId&) {
    threw = true;
  }
  CHECK(threw);
  return check_summary("test_sibyl_core");
}
