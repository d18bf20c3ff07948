#include "slocore/sim/belief_noise.h"

#include "slocore/core/errors.h"

namespace slocore::sim {

double belief_factor(double noise, uint64_t seed, Id id) {
  require(noise >= 0 && noise < 1, "belief_noise", "must be in [0, 1)");
  if (noise == 0) return 1.0;
  uint64_t z = seed * 0x9E3779B97F4A7C15ULL + uint64_t(id) + 0x9E3779B97F4A7C15ULL;  // SplitMix64 step
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  const double u = double(z >> 11) * 0x1.0p-53;  // uniform in [0, 1)
  return 1.0 + noise * (2.0 * u - 1.0);
}

LatencyCoeffs perturbed_belief(const LatencyCoeffs& belief, double noise, uint64_t seed, Id id) {
  const double f = belief_factor(noise, seed, id);
  LatencyCoeffs c = belief;
  for (double* x : {&c.t_c, &c.a_p, &c.b_p, &c.c_p, &c.a_d, &c.b_d}) *x *= f;
  return c;
}

}  // namespace slocore::sim
