// SLICE decode mask, cycle estimate and task selection (see slice/decode_mask.h).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "slocore/core/errors.h"
#include "slocore/core/input_checks.h"
#include "slocore/slice/decode_mask.h"

namespace slocore::slice {

int rate_of(double tpot) {
  require(tpot > 0, "tpot", "must be > 0");
  if (!std::isfinite(tpot)) return 1;
  // A TPOT below 1/kMaxSliceRate s is met by the largest rate a mask holds (no overflow).
  const double v = std::ceil(1.0 / tpot - 1e-9);
  return v >= double(kMaxSliceRate) ? kMaxSliceRate : std::max(1, int(v));
}

DecodeMask::DecodeMask(const std::vector<int>& rates, bool spread) : spread_(spread) {
  int64_t cells = 0;
  for (int r : rates) {
    require(r >= 1 && r <= kMaxSliceRate, "rates",
            "must be in [1, " + std::to_string(kMaxSliceRate) + "], got " + std::to_string(r));
    cells = std::max<int64_t>(cells, r);
  }
  require(cells * int64_t(rates.size()) <= kMaxDecodeMaskCells, "rates",
          "the mask (tasks x largest rate) must have at most " + std::to_string(kMaxDecodeMaskCells) + " cells");
  order_.resize(rates.size());
  std::iota(order_.begin(), order_.end(), 0);
  std::stable_sort(order_.begin(), order_.end(), [&](size_t a, size_t b) { return rates[a] > rates[b]; });
  for (size_t i : order_) rates_.push_back(rates[i]);
  cols_ = rates_.empty() ? 0 : rates_[0];
  columns_.assign(size_t(cols_), {});
  for (size_t r = 0; r < order_.size(); ++r)
    for (int c = 0; c < cols_; ++c)
      if (at(r, c)) columns_[size_t(c)].push_back(order_[r]);
}

size_t DecodeMask::row_task(size_t r) const {
  require(r < order_.size(), "row", "must be < rows (" + std::to_string(order_.size()) + "), got " + std::to_string(r));
  return order_[r];
}

bool DecodeMask::at(size_t row, int col) const {
  const int v = rates_[row];
  if (!spread_) return col < v;  // Alg. 3 lines 8-9: the first v_k columns
  // Evenly spread: a one where floor((c+1) v / V) steps up, so the gaps differ by <= 1 column.
  const long a = long(col) * v / cols_, b = long(col + 1) * v / cols_;
  return b > a;
}

double DecodeMask::period(const BatchLatencyCurve& l) const {
  double t = 0.0;
  for (const auto& c : columns_) t += l(double(c.size()));
  return t;
}

double period_eq7(const std::vector<int>& v, const BatchLatencyCurve& l) {
  if (v.empty()) return 0.0;
  const size_t b = v.size() - 1;
  double t = double(v[b]) * l(double(b + 1));
  for (size_t j = 0; j < b; ++j) t += double(v[j] - v[j + 1]) * l(double(j + 1));
  return t;
}

namespace {

// period_eq7 and DecodeMask::period with l(k) read from a table of l at 0..n (every batch a
// trial selection can form): the same values, summed in the same order.
double period_eq7_table(const std::vector<int>& v, const std::vector<double>& l) {
  if (v.empty()) return 0.0;
  const size_t b = v.size() - 1;
  double t = double(v[b]) * l[b + 1];
  for (size_t j = 0; j < b; ++j) t += double(v[j] - v[j + 1]) * l[j + 1];
  return t;
}

// Tasks of one rate, in a rate-descending list.
struct RateRun {
  int rate;
  size_t count;
};

// `runs` with one more task at rate v, into `out`.
void with_rate(const std::vector<RateRun>& runs, int v, std::vector<RateRun>& out) {
  out.clear();
  bool placed = false;
  for (const RateRun& r : runs) {
    if (!placed && v > r.rate) out.push_back({v, 1}), placed = true;
    if (!placed && v == r.rate) {
      out.push_back({v, r.count + 1}), placed = true;
      continue;
    }
    out.push_back(r);
  }
  if (!placed) out.push_back({v, 1});
}

// period_eq7_table over runs: v_b l(b+1), then (v_j - v_j+1) l(j+1) at each run's last j.
double period_eq7_runs(const std::vector<RateRun>& runs, const std::vector<double>& l) {
  size_t n = 0;
  for (const RateRun& r : runs) n += r.count;
  double t = double(runs.back().rate) * l[n];
  size_t through = 0;
  for (size_t k = 0; k + 1 < runs.size(); ++k) {
    through += runs[k].count;
    t += double(runs[k].rate - runs[k + 1].rate) * l[through];
  }
  return t;
}

double mask_period_table(const DecodeMask& m, const std::vector<double>& l) {
  double t = 0.0;
  for (int c = 0; c < m.cols(); ++c) t += l[m.column(c).size()];
  return t;
}

}  // namespace

std::vector<size_t> select_slice_tasks(const std::vector<SliceTask>& tasks, const BatchLatencyCurve& l,
                                       double max_cycle, bool spread, size_t max_tasks) {
  require(max_cycle > 0, "max_cycle", "must be > 0");
  std::vector<size_t> by_rate(tasks.size());
  std::iota(by_rate.begin(), by_rate.end(), 0);
  std::vector<double> ur(tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i) {
    require(tasks[i].tpot > 0, "tpot", "must be > 0");
    require(std::isfinite(tasks[i].utility) && tasks[i].utility >= 0, "utility", "must be finite and >= 0");
    ur[i] = utility_rate(tasks[i].utility, std::isfinite(tasks[i].tpot) ? tasks[i].tpot : 1.0);
  }
  // Line 7: by utility rate, descending, ties in input order (a total order: ur is never NaN).
  // The loop below reads at most max_tasks of them, so only that top is put in order.
  auto before = [&](size_t a, size_t b) { return ur[a] > ur[b] || (ur[a] == ur[b] && a < b); };
  const size_t top = std::min(max_tasks, tasks.size());
  if (top < tasks.size())
    std::nth_element(by_rate.begin(), by_rate.begin() + std::ptrdiff_t(top), by_rate.end(), before);
  std::sort(by_rate.begin(), by_rate.begin() + std::ptrdiff_t(top), before);
  std::vector<size_t> chosen;
  std::vector<int> rates;  // of the chosen, sorted descending (line 11)
  // A trial holds at most min(max_tasks, tasks) tasks: l at every batch size it can form, once
  // (the periods below evaluate l O(selected) times per trial).
  std::vector<double> lt(top + 1);
  for (size_t k = 0; k < lt.size(); ++k) lt[k] = l(double(k));
  // Eq. 7's terms between equal neighbours are (v_j - v_j+1) l = 0 exactly (l finite), so the
  // front-loaded cycle is summed over runs of equal rates instead of over every task: the
  // same nonzero terms in the same order, O(distinct rates) a trial instead of O(selected).
  const bool by_runs = !spread && std::all_of(lt.begin(), lt.end(), [](double x) { return std::isfinite(x); });
  std::vector<RateRun> runs, trial_runs;  // the chosen's rates, descending
  for (size_t j = 0; j < top; ++j) {
    const size_t i = by_rate[j];
    if (chosen.size() >= max_tasks) break;
    const int v = rate_of(tasks[i].tpot);
    if (by_runs) {
      with_rate(runs, v, trial_runs);
      if (period_eq7_runs(trial_runs, lt) >= max_cycle) break;  // lines 12-16
      runs.swap(trial_runs);
      chosen.push_back(i);
      continue;
    }
    std::vector<int> trial = rates;
    trial.insert(std::upper_bound(trial.begin(), trial.end(), v, std::greater<int>()), v);
    const double period =
        spread ? mask_period_table(DecodeMask(trial, true), lt) : period_eq7_table(trial, lt);  // line 12
    if (period >= max_cycle) break;                                                             // lines 13-16
    rates = std::move(trial);
    chosen.push_back(i);
  }
  return chosen;
}

}  // namespace slocore::slice
