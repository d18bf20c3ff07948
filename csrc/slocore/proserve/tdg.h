// ProServe Token-level Deadline-aware Gain (ProServe Eq. 3) as the
// scheduler's objective: the i-th token (1-based) of r is due at
//   deadline_{r,i} = arrival + TTFT_SLO + (i-1) * TPOT_SLO
// and is worth w_r(i) = w_prio * (i == 1 ? w_p : w_d) when it comes strictly before it.
// The metric over a finished run is core/metrics.h (one definition); these helpers are
// the per-step quantities SlideBatching and GoRouting reason with.
#pragma once
#include "slocore/core/instance_view.h"
#include "slocore/core/metrics.h"
#include "slocore/core/params.h"

namespace slocore::proserve {

struct TdgWeights {
  double w_prefill = 1.0;  // w_p
  double w_decode = 1.0;   // w_d
};

// Load judgments of SlideBatching / GoRouting: phi_a (Eq. 8), phi_c (Eq. 9), phi_p (P/D prefill).
enum class Phi { Aggressive, Conservative, Prefill };

// Deadline of token i (1-based): token_deadline in core/metrics.h (one definition of Eq. 3).

// Gain of token i of r when on time (Eq. 3, w_r(i)).
inline double token_weight(const Request& r, Tokens i, const TdgWeights& w) {
  return r.priority_weight * (i == 1 ? w.w_prefill : w.w_decode);
}

// The token s produces next: its index is generated + 1 (Alg. 1 line 4, "output_len + 1").
inline Tokens next_token(const RequestState& s) { return s.generated + 1; }

}  // namespace slocore::proserve
