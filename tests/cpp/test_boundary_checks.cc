// The crash sites of untrusted input, reached from C++ through the checked entry points
// (policy/checked_calls.h) and the size limits (core/input_checks.h): each bad input throws
// InvalidArgument or UnknownId naming the field; the valid call after it still works.
// CI runs this under AddressSanitizer + UndefinedBehaviorSanitizer.
#include <cmath>
#include <limits>
#include <string>

#include "slocore/batch/registry.h"
#include "slocore/core/errors.h"
#include "slocore/core/input_checks.h"
#include "slocore/policy/checked_calls.h"
#include "slocore/policy/registry.h"
#include "slocore/scale/registry.h"
#include "slocore/sibyl/survival.h"
#include "slocore/slice/decode_mask.h"

#include "check.h"

using namespace slocore;

namespace {

// True when f() throws E whose message contains `field`.
template <class E, class F>
bool throws(F f, const std::string& field) {
  try {
    f();
  } catch (const E& e) {
    return std::string(e.what()).find(field) != std::string::npos;
  } catch (...) {
    return false;
  }
  return false;
}

Request req(Id id) {
  Request r;
  r.id = id;
  r.prompt_len = 10;
  r.slo.ttft = 1.0;
  r.slo.tpot = 0.1;
  return r;
}

}  // namespace

int main() {
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();

  // SLICE decode mask: row_task out of range; a rate that would need gigabytes.
  CHECK(throws<InvalidArgument>([] { slice::DecodeMask({}, false).row_task(0); }, "row"));
  CHECK(throws<InvalidArgument>([] { slice::DecodeMask({1}, false).row_task(5); }, "row"));
  CHECK(slice::DecodeMask({1}, false).row_task(0) == 0);
  CHECK(throws<InvalidArgument>([] { slice::DecodeMask({std::numeric_limits<int>::max()}, false); }, "rates"));
  CHECK(throws<InvalidArgument>([] { slice::DecodeMask(std::vector<int>(8192, kMaxSliceRate), false); }, "rates"));
  CHECK(slice::rate_of(1e-300) == kMaxSliceRate && slice::rate_of(0.1) == 10);  // no int overflow

  // SIBYL survival estimator: 2^30 one-token buckets would be 16 GB.
  CHECK(throws<InvalidArgument>([] { sibyl::SurvivalEstimator(1, 0.5, Tokens(1) << 30); }, "max_len"));
  CHECK(sibyl::SurvivalEstimator(64, 0.5, 32768).buckets() == 512);

  // A view with block_size 0 divides by zero in blocks_for and in every scheduler.
  InstanceView bad;
  bad.block_size = 0;
  bad.waiting = {RequestState{req(1)}};
  CHECK(throws<InvalidArgument>([&] { check_view(bad); }, "block_size"));
  for (const std::string& name : batch_scheduler_names()) {
    auto s = make_batch_scheduler(name, {});
    CHECK(throws<InvalidArgument>([&] { checked::schedule(*s, bad, 0.0); }, "block_size"));
    InstanceView good = bad;
    good.block_size = 16;
    good.kv_blocks_total = good.kv_blocks_free = 100;
    good.model = LatencyModel(LatencyCoeffs{0.01, 0.0, 0.0, 1e-4, 1e-6, 1e-4});
    checked::schedule(*s, good, 0.0);  // the valid view is scheduled (no throw)
    CHECK(throws<InvalidArgument>([&] { checked::schedule(*s, good, nan); }, "now"));
  }
  InstanceView dup;
  dup.waiting = {RequestState{req(1)}, RequestState{req(1)}};
  CHECK(throws<InvalidArgument>([&] { check_view(dup); }, "duplicate id 1"));
  CHECK(throws<InvalidArgument>([] { check_views({InstanceView{}, InstanceView{}}); }, "views"));

  // Every global policy: duplicate pending ids, unknown ids in on_*, non-finite times.
  for (const std::string& name : global_policy_names()) {
    auto p = make_global_policy(name, {});
    std::vector<InstanceView> views(2);
    views[1].id = 1;
    checked::submit(*p, req(1), 0.0, nan);
    CHECK(throws<InvalidArgument>([&] { checked::submit(*p, req(1), 0.0, nan); }, "duplicate id 1"));
    CHECK(throws<InvalidArgument>([&] { checked::submit(*p, req(2), inf, nan); }, "now"));
    CHECK(throws<InvalidArgument>([&] { checked::submit(*p, req(2), 0.0, -1.0); }, "expected_handoff"));
    CHECK(throws<InvalidArgument>([&] { checked::poll(*p, nan, views); }, "now"));
    CHECK(throws<UnknownId>([&] { checked::on_token(*p, 99, 0, 1, 1.0); }, "unknown id 99"));
    CHECK(throws<UnknownId>([&] { checked::on_finished(*p, 99, 0, 1.0); }, "unknown id 99"));
    CHECK(throws<UnknownId>([&] { checked::on_instance_removed(*p, 5, 1.0); }, "instance"));
    checked::on_instance_added(*p, 0, Role::Colocated, 0.0);
    CHECK(throws<InvalidArgument>([&] { checked::on_instance_added(*p, 0, Role::Colocated, 0.0); }, "instance"));
    for (const Assignment& a : checked::poll(*p, 0.0, views)) checked::on_token(*p, a.request, a.instance, 1, 0.5);
    checked::on_finished(*p, 1, 0, 1.0);
    CHECK(throws<UnknownId>([&] { checked::on_finished(*p, 1, 0, 2.0); }, "unknown id 1"));
    CHECK(!p->ledger().live(1));
  }

  // Scalers: a request arrives once; first token and finish must name a known one.
  for (const std::string& name : scaler_names()) {
    auto s = make_scaler(name, {});
    checked::on_arrival(*s, req(3), 0.0);
    CHECK(throws<InvalidArgument>([&] { checked::on_arrival(*s, req(3), 0.0); }, "duplicate id 3"));
    CHECK(throws<UnknownId>([&] { checked::on_first_token(*s, 4, 1.0); }, "unknown id 4"));
    CHECK(throws<InvalidArgument>([&] { checked::decide(*s, 1.0, {bad}); }, "block_size"));
    checked::on_finished(*s, 3, 1.0);
    CHECK(throws<UnknownId>([&] { checked::on_finished(*s, 3, 2.0); }, "unknown id 3"));
  }

  // Scalar checks used by the latency-model bindings.
  CHECK(throws<InvalidArgument>([] { check_tokens(-5, "lq"); }, "lq"));
  CHECK(throws<InvalidArgument>([] { check_tokens(Tokens(1) << 41, "lkv"); }, "lkv"));
  CHECK(throws<InvalidArgument>([&] { check_duration(inf, "sum_len"); }, "sum_len"));
  CHECK(throws<InvalidArgument>([&] { check_time(nan, "now"); }, "now"));
  check_optional_time(nan, "expected_handoff");  // absent is fine
  return check_summary("test_boundary_checks");
}
