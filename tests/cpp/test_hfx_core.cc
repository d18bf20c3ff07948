// HFX core without Python: indexed heap invariants, Eq. 5 / maturity, the Alg. 1 dispatcher
// on a hand-built view, the Eq. 6 mapper, the Alg. 3 scaler, and a registry-built HFX run in
// the simulator (P/D included). Exit code != 0 on any failure.
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <random>

#include "slocore/batch/registry.h"
#include "slocore/core/metrics.h"
#include "slocore/hfx/dispatcher.h"
#include "slocore/hfx/indexed_heap.h"
#include "slocore/hfx/priority_mapper.h"
#include "slocore/hfx/scaler.h"
#include "slocore/policy/registry.h"
#include "slocore/scale/registry.h"
#include "slocore/sim/simulator.h"

#include "check.h"

using namespace slocore;

static bool near(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(b)); }

int main() {
  // Indexed heap: random set/update/erase keeps the minimum right.
  hfx::IndexedHeap h;
  std::map<Id, double> truth;
  std::mt19937_64 rng(1);
  for (int i = 0; i < 2000; ++i) {
    const Id id = Id(rng() % 50);
    if (rng() % 4 == 0) {
      h.erase(id);
      truth.erase(id);
    } else {
      const double k = double(rng() % 1000);
      h.set(id, k);
      truth[id] = k;
    }
    CHECK(h.size() == truth.size());
    if (!truth.empty()) {
      auto best = truth.begin();
      for (auto it = truth.begin(); it != truth.end(); ++it)
        if (it->second < best->second) best = it;  // ties: smallest id (map order)
      CHECK(h.top().first == best->first && h.top().second == best->second);
    }
  }

  // Eq. 5 and the maturity rule, hand-checked.
  CHECK(near(hfx::token_budget(0.7, 0.5, 0.03, 0.024, 1.2e-4), 0.317 / 6e-5));
  CHECK(near(hfx::maturity_time(10.0, 0.2, 0.1, 0.5), 10.25));
  CHECK(near(hfx::maturity_time(10.0, 0.2, 0.6, 0.5), 10.8));

  // Dispatcher: an idle instance takes requests in (TPOT, arrival) order within its budget.
  LatencyModel m(LatencyCoeffs{0.024, 0.0, 0.0, 1.2e-4, 6e-8, 2.4e-5});
  InstanceView v;
  v.id = 7;
  v.model = m;
  v.kv_blocks_total = v.kv_blocks_free = 10000;
  hfx::Dispatcher d;
  for (int i = 0; i < 30; ++i) {
    Request r;
    r.id = i;
    r.prompt_len = 400;
    r.output_len = 5;
    r.slo.ttft = 0.7;
    r.slo.tpot = i < 15 ? 0.9 : 0.5;  // the later ones are stricter: they go first
    d.submit(r, 0.0, std::nan(""));
  }
  auto out = d.poll(0.0, {v});
  const double budget = d.last_budget(7);
  CHECK(near(budget, std::min(hfx::token_budget(0.7, 0.5, 0.0, 0.024, 1.2e-4), double(v.max_batch_tokens))));
  CHECK(!out.empty() && double(out.size()) * 400 <= budget && double(out.size() + 1) * 400 > budget);
  for (const Assignment& a : out) CHECK(a.request >= 15 && a.instance == 7);
  CHECK(d.maturity(7) > 0.0 && d.poll(0.001, {v}).empty());

  // Eq. 6 mapper: two priorities, p=1 of N=2 lands at base C_0 + floor(2/3 * C_1).
  hfx::MapperParams mp;
  mp.ttft_base = {1.0, 2.0};
  mp.tpot_base = {0.5, 1.0};
  mp.queue_correction = false;
  hfx::PriorityMapper pm(mp);
  for (int i = 0; i < 6; ++i) pm.record(0, 0.8 + 0.01 * i, 0.0, 0.4);
  for (int i = 0; i < 3; ++i) pm.record(1, 1.0 + 0.5 * i, 0.0, 0.9);
  CHECK(pm.index(1) == 8 && pm.index(0) == 2);
  CHECK(near(pm.map(0, false).first, 0.82));

  // Scaler: a queue past half its TTFT scales out.
  hfx::HfxScaler sc;
  for (int i = 0; i < 10; ++i) {
    Request r;
    r.id = i;
    r.slo.ttft = 1.0;
    sc.on_arrival(r, 0.0);
  }
  auto dec = sc.decide(0.9, {v});
  CHECK(dec.size() == 1 && dec[0].action == ScaleAction::ScaleOut);

  // Simulation through the registry: colocated HFX with its scaler, then P/D.
  HardwareProfile prof;
  prof.name = "test";
  prof.coeffs = LatencyCoeffs{0.01, 0, 0, 1e-4, 1e-6, 1e-4};
  prof.kv_blocks = 4096;
  std::vector<Request> reqs;
  for (int i = 0; i < 300; ++i) {
    Request r;
    r.id = i;
    r.arrival = 0.01 * i;
    r.prompt_len = 50 + 37 * (i % 13);
    r.output_len = 1 + (i % 17);
    r.slo.ttft = 0.5 + 0.5 * (i % 3);
    r.slo.tpot = 0.1;
    reqs.push_back(r);
  }
  sim::SimConfig cfg;
  cfg.profile = prof;
  cfg.instances = 2;
  cfg.max_instances = 4;
  cfg.global_policy = make_global_policy("hfx");
  cfg.scaler = make_scaler("hfx");
  cfg.batch_scheduler = [] { return make_batch_scheduler("sarathi_fcfs"); };
  sim::SimResult res = sim::simulate(reqs, cfg);
  Summary s = summarize(res.recorder);
  CHECK(s.finished == 300 && res.stats.stalled == 0 && res.stats.plan_violations == 0);

  for (const char* name : {"hfx_pm", "scorpio", "hfx_prefill"}) {  // the other colocated-capable policies
    sim::SimConfig c2 = cfg;
    c2.global_policy = make_global_policy(name);
    sim::SimResult r = sim::simulate(reqs, c2);
    CHECK(summarize(r.recorder).finished == 300 && r.stats.stalled == 0);
  }

  sim::SimConfig pd = cfg;
  pd.disaggregated = true;
  pd.prefill_instances = pd.decode_instances = 2;
  pd.max_instances = 6;
  pd.prefill_policy = make_global_policy("hfx_prefill");
  pd.decode_policy = make_global_policy("hfx_migrator");
  pd.scaler = make_scaler("hfx");
  sim::SimResult r2 = sim::simulate(reqs, pd);
  CHECK(summarize(r2.recorder).finished == 300 && r2.stats.stalled == 0);

  return check_summary("test_hfx_core");
}
