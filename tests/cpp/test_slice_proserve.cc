// SLICE and ProServe from C++ alone (no Python): the Fig. 4 mask, Eq. 7 against the mask's
// column sum, Table II selection, one SlideBatching plan and a GoRouting choice.
#include <cmath>
#include <cstdio>

#include "slocore/batch/registry.h"
#include "slocore/policy/registry.h"
#include "slocore/proserve/slide_batching.h"
#include "slocore/slice/decode_mask.h"

#include "check.h"

using namespace slocore;

int main() {
  // Fig. 4: rates 6/4/2/1 -> 4 x 6 front-loaded mask; column 2 holds the two fastest tasks.
  slice::DecodeMask m({6, 4, 2, 1}, false);
  CHECK(m.rows() == 4 && m.cols() == 6);
  CHECK(m.column(2).size() == 2 && m.column(0).size() == 4 && m.column(5).size() == 1);
  std::vector<double> b, l;
  for (int i = 1; i <= 12; ++i) b.push_back(i), l.push_back(0.0243 + 0.01155 * i);
  BatchLatencyCurve curve(b, l);
  CHECK(std::fabs(slice::period_eq7({6, 4, 2, 1}, curve) - m.period(curve)) < 1e-12);
  // Table II: 9 tasks need a 1.10 s cycle; 8 are selected (C, B, then two of the A tasks).
  std::vector<slice::SliceTask> t;
  for (double tp : {0.1, 0.1, 0.1, 0.12, 0.12, 0.12, 0.12, 0.25, 0.25}) t.push_back({tp, 1.0});
  CHECK(slice::select_slice_tasks(t, curve).size() == 8);

  // SlideBatching: an urgent, dense, high-priority prompt goes before a lax long one.
  InstanceView v;
  v.kv_blocks_total = v.kv_blocks_free = 10000;
  v.model = LatencyModel(LatencyCoeffs{0.01, 2e-8, 1e-9, 1e-4, 1e-6, 2e-3});
  RequestState a, c;
  a.request.id = 1, a.request.prompt_len = 2000, a.request.slo.ttft = 5.0, a.request.slo.tpot = 0.1;
  c.request.id = 2, c.request.prompt_len = 100, c.request.slo.ttft = 0.2, c.request.slo.tpot = 0.1;
  c.request.priority_weight = 2.0;
  v.waiting = {a, c};
  BatchPlan p = make_batch_scheduler("slide_batching", {})->schedule(v, 0.0);
  CHECK(!p.items.empty() && p.items[0].request == 2);

  // GoRouting (pd): the idle instance takes the request.
  auto g = make_global_policy("goroute", {{"mode", std::string("pd")}});
  std::vector<InstanceView> views(2, v);
  views[0].id = 0, views[1].id = 1;
  views[0].waiting.clear(), views[1].waiting.clear();
  g->submit(a.request, 0.0);
  g->submit(c.request, 0.0);
  auto out = g->poll(0.0, views);
  CHECK(out.size() == 2 && out[0].instance != out[1].instance);
  return check_summary("test_slice_proserve");
}
