#include "slocore/core/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "slocore/core/errors.h"
#include "slocore/core/order_statistics.h"

namespace slocore {

void MetricsOptions::validate() const {
  require_positive(w_prefill, "w_prefill");
  require_positive(w_decode, "w_decode");
  require_positive(cost_unit_s, "cost_unit_s");
  for (double q : quantiles) require(q >= 0.0 && q <= 1.0, "quantiles", "must be in [0, 1]");
  require(std::isfinite(warmup_s) && warmup_s >= 0.0, "warmup_s", "must be finite and >= 0");
}

RequestMetrics request_metrics(const RequestRecord& rec, const MetricsOptions& opt) {
  const Request& r = rec.request;
  const auto& t = rec.token_times;
  RequestMetrics m;
  m.id = r.id;
  m.tokens = Tokens(t.size());
  const bool finished = rec.outcome == Outcome::Finished;
  if (!t.empty()) {
    m.ttft = t.front() - r.arrival;
    if (t.size() >= 2) m.tpot = (t.back() - t.front()) / double(t.size() - 1);
  }
  if (finished) m.e2e = t.back() - r.arrival;
  m.ttft_met = !t.empty() && m.ttft < r.slo.ttft;
  m.tpot_met = finished && (t.size() < 2 || m.tpot < r.slo.tpot);
  m.deadline_met = !r.slo.deadline || (finished && m.e2e <= *r.slo.deadline);
  m.slo_met = finished && m.ttft_met && m.tpot_met && m.deadline_met;

  // TDG, ProServe Eq. 3: token i (1-based) is due at arrival + TTFT + (i-1)*TPOT.
  const double w1 = opt.w_prefill * r.priority_weight, wd = opt.w_decode * r.priority_weight;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] < token_deadline(r, Tokens(i + 1))) m.tdg += i == 0 ? w1 : wd;
  }
  const Tokens n = std::max<Tokens>(r.output_len_or(m.tokens), std::max<Tokens>(m.tokens, 1));
  m.tdg_ideal = w1 + wd * double(n - 1);
  return m;
}

namespace {
// Quantile q of n sorted values: `a` at rank floor(q (n - 1)) and `b` at the next (or `a` at
// the last), interpolated linearly.
size_t lower_rank(double q, size_t n) { return size_t(std::floor(q * double(n - 1))); }
double interpolate(double a, double b, double q, size_t n) {
  const double pos = q * double(n - 1);
  return a + (b - a) * (pos - std::floor(pos));
}

// f(gap) for every gap between consecutive token times (TBT).
template <class F>
void for_each_gap(const std::vector<double>& t, F&& f) {
  for (size_t i = 1; i < t.size(); ++i) f(t[i] - t[i - 1]);
}
}  // namespace

double quantile_sorted(const std::vector<double>& s, double q) {
  if (s.empty()) return std::numeric_limits<double>::quiet_NaN();
  const size_t lo = lower_rank(q, s.size());
  return interpolate(s[lo], s[std::min(lo + 1, s.size() - 1)], q, s.size());
}

Distribution distribution(std::vector<double> v, const std::vector<double>& quantiles) {
  Distribution d;
  d.count = v.size();
  if (v.empty()) {
    d.mean = d.max = std::numeric_limits<double>::quiet_NaN();
    d.quantiles.assign(quantiles.size(), std::numeric_limits<double>::quiet_NaN());
    return d;
  }
  double sum = 0.0;
  for (double x : v) sum += x;
  d.mean = sum / double(v.size());
  d.max = *std::max_element(v.begin(), v.end());
  // Order statistics by selection, not a full sort: quantiles in ascending order narrow the
  // range, so a handful of quantiles cost O(n) instead of O(n log n).
  std::vector<size_t> order(quantiles.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return quantiles[a] < quantiles[b]; });
  d.quantiles.assign(quantiles.size(), 0.0);
  auto first = v.begin();
  for (size_t i : order) {
    const size_t lo = lower_rank(quantiles[i], v.size());
    auto nth = v.begin() + std::ptrdiff_t(lo);
    std::nth_element(first, nth, v.end());
    const double a = *nth;
    const double b = lo + 1 < v.size() ? *std::min_element(nth + 1, v.end()) : a;
    d.quantiles[i] = interpolate(a, b, quantiles[i], v.size());
    first = nth;
  }
  return d;
}

// distribution() of the n values for_each gives (sum: theirs added in order, max: the
// largest), read in passes instead of stored (core/order_statistics.h): the same figures.
template <class ForEach>
Distribution streamed_distribution(ForEach&& for_each, size_t n, double sum, double max,
                                   const std::vector<double>& quantiles) {
  if (n == 0) return distribution({}, quantiles);
  Distribution d;
  d.count = n;
  d.mean = sum / double(n);
  d.max = max;
  std::vector<size_t> ranks;
  for (double q : quantiles) {
    const size_t lo = lower_rank(q, n);
    ranks.push_back(lo);
    ranks.push_back(std::min(lo + 1, n - 1));
  }
  const std::vector<double> at = select_ranks(for_each, ranks);
  for (size_t i = 0; i < quantiles.size(); ++i)
    d.quantiles.push_back(interpolate(at[2 * i], at[2 * i + 1], quantiles[i], n));
  return d;
}

Summary summarize(const Recorder& recorder, const MetricsOptions& opt) {
  opt.validate();
  Summary s;
  std::vector<double> ttft, tpot, e2e;
  for (auto* v : {&ttft, &tpot, &e2e}) v->reserve(recorder.records().size());
  size_t tbt_n = 0;  // the gaps between tokens, counted, summed and maxed here, not stored
  double tbt_sum = 0.0, tbt_max = -std::numeric_limits<double>::infinity();
  std::map<std::string, size_t> met_by_task;
  std::map<int, size_t> met_by_prio;
  size_t met = 0, ttft_met = 0, tpot_met = 0;
  double first_arrival = kNever, last_token = -kNever;
  for (const RequestRecord& rec : recorder.records()) {
    const Request& r = rec.request;
    if (r.arrival < opt.warmup_s) continue;  // warm-up excluded
    const RequestMetrics m = request_metrics(rec, opt);
    ++s.requests;
    s.finished += rec.outcome == Outcome::Finished;
    s.rejected += rec.outcome == Outcome::Rejected;
    met += m.slo_met;
    ttft_met += m.ttft_met;
    tpot_met += m.tpot_met;
    ++s.count_by_task[r.task];
    ++s.count_by_priority[r.priority];
    met_by_task[r.task] += m.slo_met;
    met_by_prio[r.priority] += m.slo_met;
    s.tdg += m.tdg;
    s.tdg_ideal += m.tdg_ideal;
    s.output_tokens += m.tokens;
    first_arrival = std::min(first_arrival, r.arrival);
    const auto& t = rec.token_times;
    if (!t.empty()) {
      ttft.push_back(m.ttft);
      last_token = std::max(last_token, t.back());
      for_each_gap(t, [&](double g) { tbt_sum += g, tbt_max = std::max(tbt_max, g); });
      tbt_n += t.size() - 1;
      if (t.size() >= 2) tpot.push_back(m.tpot);
    }
    if (rec.outcome == Outcome::Finished) e2e.push_back(m.e2e);
  }
  if (s.requests > 0) {
    const double n = double(s.requests);
    s.attainment = double(met) / n;
    s.ttft_attainment = double(ttft_met) / n;
    s.tpot_attainment = double(tpot_met) / n;
  }
  for (const auto& kv : s.count_by_task)
    s.attainment_by_task[kv.first] = double(met_by_task[kv.first]) / double(kv.second);
  for (const auto& kv : s.count_by_priority)
    s.attainment_by_priority[kv.first] = double(met_by_prio[kv.first]) / double(kv.second);
  s.ttft = distribution(std::move(ttft), opt.quantiles);
  s.tpot = distribution(std::move(tpot), opt.quantiles);
  auto each_tbt = [&](auto&& f) {
    for (const RequestRecord& rec : recorder.records()) {
      if (rec.request.arrival >= opt.warmup_s) for_each_gap(rec.token_times, f);
    }
  };
  s.tbt = streamed_distribution(each_tbt, tbt_n, tbt_sum, tbt_max, opt.quantiles);
  s.e2e = distribution(std::move(e2e), opt.quantiles);
  s.duration_s = s.output_tokens > 0 ? last_token - first_arrival : 0.0;
  s.throughput_tok_s = s.duration_s > 0 ? double(s.output_tokens) / s.duration_s : 0.0;
  if (s.tdg_ideal > 0) {
    s.tdg_ratio = s.tdg / s.tdg_ideal;
    s.miss_tdg_ratio = (s.tdg_ideal - s.tdg) / s.tdg_ideal;
  }
  s.instance_seconds = recorder.instance_seconds();
  s.cost_units = s.instance_seconds / opt.cost_unit_s;
  return s;
}

}  // namespace slocore
