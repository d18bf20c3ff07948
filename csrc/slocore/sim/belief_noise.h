// Per-instance predictor error (the benchmark matrix's "+-x% per instance" row): the
// policies' latency model of instance `id` is the shared belief with every coefficient times
// one factor drawn uniformly in [1 - noise, 1 + noise], from SplitMix64 of (seed, id), so a
// run is deterministic and an instance keeps its error for its lifetime. The pure-Python
// reference is slocore.reference.belief_noise.
#pragma once
#include <cstdint>

#include "slocore/core/latency_model.h"
#include "slocore/core/types.h"

namespace slocore::sim {

double belief_factor(double noise, uint64_t seed, Id id);  // 1.0 when noise == 0
LatencyCoeffs perturbed_belief(const LatencyCoeffs& belief, double noise, uint64_t seed, Id id);

}  // namespace slocore::sim
