// The embedding path for C++ engines (xLLM): link slocore_core, include its headers, no
// Python. Exercises validation, latency models, metrics, a registry policy and a small
// simulation with a C++ batch scheduler defined here. Exit code != 0 on any failure.
#include <cmath>
#include <cstdio>
#include <memory>

#include "slocore/batch/batch_scheduler.h"
#include "slocore/core/errors.h"
#include "slocore/core/fit.h"
#include "slocore/core/metrics.h"
#include "slocore/policy/registry.h"
#include "slocore/sim/simulator.h"

#include "check.h"

using namespace slocore;

// Decode-first FCFS with whole prefills, enough to drive the simulator.
struct Fcfs : BatchScheduler {
  std::string name() const override { return "test_fcfs"; }
  BatchPlan schedule(const InstanceView& v, Time) override {
    BatchPlan p;
    Tokens budget = v.max_batch_tokens;
    int64_t blocks = v.kv_blocks_free;
    auto take = [&](const RequestState& s, bool running) {
      const Tokens k = s.in_prefill() ? std::min(s.to_compute(), budget) : 1;
      const int64_t need = v.blocks_needed(s, k, running);
      if (k <= 0 || need > blocks || int(p.items.size()) >= v.max_num_seqs) return false;
      p.items.push_back({s.request.id, k});
      budget -= k;
      blocks -= need;
      return true;
    };
    for (const RequestState& s : v.running) take(s, true);
    for (const RequestState& s : v.waiting)
      if (!take(s, false)) break;
    return p;
  }
};

int main() {
  // Validation: a bad request raises InvalidArgument naming the field, no abort.
  Request bad;
  bad.prompt_len = -1;
  try {
    validate(bad);
    CHECK(false);
  } catch (const InvalidArgument& e) {
    CHECK(std::string(e.what()).find("prompt_len") != std::string::npos);
  }

  // HFX Eq. 1 == ProServe Eq. 7 for a fresh prefill batch.
  LatencyModel m(LatencyCoeffs{0.02, 1e-8, 0.0, 1e-4, 1e-6, 1e-3});
  CHECK(std::abs(m.stage_prefill(300, 100.0 * 100 + 200.0 * 200) - m.batch_time({{100, 0, true}, {200, 0, true}})) <
        1e-12);

  // Fit recovers a line exactly.
  FitResult f = fit_relative_least_squares({{1, 1}, {1, 2}, {1, 3}}, {3, 5, 7});
  CHECK(std::abs(f.coeffs[0] - 1) < 1e-9 && std::abs(f.coeffs[1] - 2) < 1e-9);

  // A small colocated simulation through the registry's round robin.
  HardwareProfile prof;
  prof.name = "test";
  prof.coeffs = LatencyCoeffs{0.01, 0, 0, 1e-4, 1e-6, 1e-4};
  prof.kv_blocks = 4096;
  sim::SimConfig cfg;
  cfg.profile = prof;
  cfg.instances = 2;
  cfg.global_policy = make_global_policy("round_robin");
  cfg.batch_scheduler = [] { return std::make_shared<Fcfs>(); };
  std::vector<Request> reqs;
  for (int i = 0; i < 100; ++i) {
    Request r;
    r.id = i;
    r.arrival = 0.05 * i;
    r.prompt_len = 50 + 7 * (i % 13);
    r.output_len = 1 + (i % 17);
    r.slo.ttft = 1.0;
    r.slo.tpot = 0.1;
    reqs.push_back(r);
  }
  sim::SimResult res = sim::simulate(reqs, cfg);
  Summary s = summarize(res.recorder);
  CHECK(s.requests == 100 && s.finished == 100);
  CHECK(res.stats.plan_violations == 0 && res.stats.stalled == 0);
  int64_t expected_tokens = 0;
  for (const Request& r : reqs) expected_tokens += *r.output_len;
  CHECK(s.output_tokens == expected_tokens);
  CHECK(s.attainment > 0.99);
  // Same seed, same result, bit for bit.
  sim::SimResult again = sim::simulate(reqs, cfg);
  CHECK(again.recorder.records().back().token_times == res.recorder.records().back().token_times);

  return check_summary("test_embed_core");
}
