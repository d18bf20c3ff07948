// SLICE decode-mask matrix and task selection (SLICE Alg. 2-3, Eq. 6-7):
//  * rate v_i = ceil(1 / TPOT_i) tokens per cycle (Alg. 3 line 7; a cycle <= 1 s meets TPOT_i);
//  * utility rate r_i = U_i * TPOT_i (Eq. 6);
//  * the mask M (|b| x v_0, rows sorted by rate descending): row k has v_k ones, at the
//    front (Alg. 3 lines 3-11, Fig. 4) or, as an option, spread evenly over the cycle;
//    column j is the decode batch of step j (column scanning, Alg. 3 lines 12-19);
//  * the cycle estimate T_period = sum over columns of l(|column|), which for the
//    front-loaded mask is Eq. 7: v_b l(b+1) + sum_j (v_j - v_{j+1}) l(j+1);
//  * TASKSELECTION (Alg. 2): add tasks by utility rate while the cycle stays < max_cycle.
#pragma once
#include <vector>

#include "slocore/core/latency_model.h"

namespace slocore::slice {

// ceil(1/tpot) with a guard for 1/0.1-style round-off; no target (inf) gives 1.
int rate_of(double tpot);
inline double utility_rate(double utility, double tpot) { return utility * tpot; }  // Eq. 6

class DecodeMask {
 public:
  DecodeMask() = default;
  // `rates` in any order; rows are kept sorted by rate descending (stable).
  DecodeMask(const std::vector<int>& rates, bool spread);

  size_t rows() const { return order_.size(); }
  int cols() const { return cols_; }
  // Row r of the mask is the task at input position row_task(r).
  size_t row_task(size_t r) const { return order_[r]; }
  bool at(size_t row, int col) const;
  // Input positions of the tasks whose row has a 1 in column `col`.
  const std::vector<size_t>& column(int col) const { return columns_[size_t(col)]; }
  // sum_j l(|column j|): Eq. 7 for the front-loaded mask.
  double period(const BatchLatencyCurve& l) const;

 private:
  std::vector<size_t> order_;
  std::vector<int> rates_;  // by row
  int cols_ = 0;
  bool spread_ = false;
  std::vector<std::vector<size_t>> columns_;
};

// Eq. 7 for rates sorted descending (the front-loaded mask), without building it.
double period_eq7(const std::vector<int>& rates_desc, const BatchLatencyCurve& l);

struct SliceTask {
  double tpot = 0.1;
  double utility = 1.0;
};

// Alg. 2: input positions of the selected tasks, in selection (utility-rate) order; ties
// keep input order. At most `max_tasks` tasks.
std::vector<size_t> select_slice_tasks(const std::vector<SliceTask>& tasks, const BatchLatencyCurve& l,
                                       double max_cycle = 1.0, bool spread = false, size_t max_tasks = 1u << 30);

}  // namespace slocore::slice
