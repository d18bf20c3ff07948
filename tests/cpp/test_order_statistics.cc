// select_ranks (core/order_statistics.h) against a sorted copy, exactly, over sequences that
// exercise each of its passes: values spread over many binades (the first digit decides),
// values in one narrow cluster (the second digit), repeats of a few values and a cluster
// narrower than a 32-bit prefix (the collected values decide), negatives, infinities, and
// sequences of one or two values. And summarize's TBT figures, which it reads that way,
// against distribution() of the gaps stored.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "slocore/core/metrics.h"
#include "slocore/core/order_statistics.h"
#include "slocore/core/recorder.h"

#include "check.h"

using namespace slocore;

std::vector<double> sequence(std::mt19937_64& rng, int kind, size_t n) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::normal_distribution<double> z(0.0, 1.0);
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> v(n);
  for (double& x : v) {
    switch (kind) {
      case 0:  // many binades, both signs
        x = std::exp(20.0 * z(rng)) * (u(rng) < 0.3 ? -1.0 : 1.0);
        break;
      case 1:  // one cluster
        x = 0.03 * (1.0 + 1e-3 * u(rng));
        break;
      case 2:  // repeats
        x = std::vector<double>{0.0, 0.5, 0.5000001, 7.0, -2.0}[rng() % 5];
        break;
      case 3:  // closer than a 32-bit prefix
        x = 0.03 * (1.0 + 1e-9 * double(rng() % 50));
        break;
      default:
        x = u(rng) < 0.05 ? (rng() % 2 ? inf : -inf) : z(rng);
        break;
    }
  }
  return v;
}

void check_ranks(std::mt19937_64& rng, const std::vector<double>& v) {
  std::vector<double> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  std::vector<size_t> ranks{0, v.size() - 1};
  for (int i = 0; i < 6; ++i) ranks.push_back(size_t(rng() % v.size()));
  int passes = 0;
  const std::vector<double> got = select_ranks(
      [&](auto&& f) {
        ++passes;
        for (double x : v) f(x);
      },
      ranks);
  CHECK(passes == 3);
  CHECK(got.size() == ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) CHECK(got[i] == sorted[ranks[i]]);
}

void check_summarize_tbt(std::mt19937_64& rng) {
  Recorder rec;
  std::vector<double> gaps;
  for (Id id = 0; id < 300; ++id) {
    Request r;
    r.id = id;
    r.arrival = double(id % 7);
    r.slo.ttft = 1.0;
    r.slo.tpot = 0.1;
    rec.add(r);
    double t = r.arrival + 0.5;
    const int tokens = int(rng() % 40);
    for (int i = 0; i < tokens; ++i) {
      const double gap = rng() % 3 ? 0.03 * (1.0 + 1e-3 * double(rng() % 100)) : double(rng() % 5);
      t += i ? gap : 0.0;
      rec.token(id, t, 0);
    }
    if (tokens) rec.finish(id, t);
  }
  MetricsOptions opt;
  opt.warmup_s = 2.0;  // the gaps of requests arriving before it are left out
  for (const RequestRecord& r : rec.records())
    if (r.request.arrival >= opt.warmup_s)
      for (size_t i = 1; i < r.token_times.size(); ++i) gaps.push_back(r.token_times[i] - r.token_times[i - 1]);
  const Distribution want = distribution(gaps, opt.quantiles), got = summarize(rec, opt).tbt;
  CHECK(got.count == want.count && got.mean == want.mean && got.max == want.max);
  CHECK(got.quantiles == want.quantiles);
}

int main() {
  std::mt19937_64 rng(7);
  for (int kind = 0; kind < 5; ++kind)
    for (size_t n : {size_t(1), size_t(2), size_t(3), size_t(100), size_t(5000), size_t(200000)})
      check_ranks(rng, sequence(rng, kind, n));
  for (int round = 0; round < 20; ++round) check_summarize_tbt(rng);
  return check_summary("test_order_statistics");
}
