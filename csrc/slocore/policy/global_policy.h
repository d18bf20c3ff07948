// Global policy contract: which instance gets a request, and when.
// Push policies (RR, least-load, GoRouting, SIBYL) decide at submit and hand the decision
// out at the next poll; pull policies (HFX dispatcher, migrator) keep a queue and release
// batches when an instance matures, telling the caller when to poll via next_wakeup().
//
// The event contract. The simulator (sim/simulator.cc) and the live router (serve/colocated.py,
// serve/pd.py, serve/stream.py) make exactly these calls, in this order, for every request;
// tests/test_conformance.py checks it for every registered policy.
//
// * Ids. A request keeps one id for its whole life, for every policy that sees it (the
//   prefill and the decode policy of P/D see the same id) and across retries.
// * `now` is the caller's clock when the event happens: simulated seconds in the simulator,
//   seconds since the router started live. Token events carry the time the token was
//   produced (the end of the engine iteration; live, when the router read it).
// * submit(r, now, expected_handoff): r enters this policy's queue. Colocated and P/D
//   prefill policy: at arrival. P/D decode policy: at the handoff (the prefill is done),
//   or at prefill start when early_assignment() is true (see below). expected_handoff is
//   NaN except for early assignment, where it is the predicted end of r's prefill
//   (expected_handoff() below, from the prefill instance's view at placement).
// * poll(now, views) -> Assignments: every submitted request is returned exactly once,
//   then the caller sends it to that instance. A request that leaves before it is assigned
//   (the client went away, the router gave up waiting, a P/D request that finished at
//   prefill while early-submitted to the decode policy) gets on_cancelled(id, now) instead
//   and nothing more: pull policies drop it from their queue.
// * on_token(id, instance, generated, now): one call per output token produced on the
//   instance this policy placed the request on; `generated` counts the request's output
//   tokens so far, over the whole request (1-based). Colocated: 1..n. P/D: token 1 is the
//   prefill's (the prefill policy sees on_token(1)); the decode policy sees 2..n (live, the
//   decode engine recomputes token 1 from the transferred KV, as vLLM does; that repeat is
//   not reported).
// * on_prefill_done(id, prefill_instance, now): P/D only, at the handoff (the prefill
//   instance produced token 1 and the KV leaves it): to the prefill policy right after its
//   on_token(1), then to the decode policy (after its submit unless early-assigned), with
//   the prefill instance's id. Colocated policies learn the end of prefill from
//   on_token(generated=1); they get no on_prefill_done.
// * on_finished(id, instance, now): exactly once per placement, when the request leaves the
//   instance it was assigned to: after its last token, at the handoff for the P/D prefill
//   policy (after on_prefill_done), or when the attempt failed. An early decode placement
//   that is never used (the request ended at prefill) also ends with on_finished.
// * Retry (live only: the engine failed before output reached the client): on_finished(id,
//   failed_instance, now), then submit(r, now) again with the same id; the sequence starts
//   over. The simulator re-submits the same way when a decode target drained during the KV
//   transfer (on_finished for the old target, then submit).
// * Early assignment (early_assignment() true, SIBYL Alg. 1 / its RR and ILS baselines):
//   when the prefill policy places r on instance p, the decode policy gets submit(r, now,
//   expected_handoff(view of p, r, now)) and is polled at once; its choice is kept until the
//   handoff, where on_prefill_done(id, p, now) follows and the KV goes to that instance.
// * on_instance_added / on_instance_removed: when an instance joins this policy's pool
//   (ready to accept work) and when it leaves it (drained, failed, removed); views passed
//   to poll() only list instances in the pool.
#pragma once
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "slocore/core/id_ledger.h"
#include "slocore/core/instance_view.h"
#include "slocore/core/params.h"
#include "slocore/core/prefix.h"

namespace slocore {

struct Assignment {
  Id request = 0;
  Id instance = kNoInstance;
};

class GlobalPolicy {
 public:
  virtual ~GlobalPolicy() = default;
  virtual std::string name() const = 0;
  virtual ParamMap params() const { return {}; }

  virtual void submit(const Request& r, Time now, Time expected_handoff = std::nan("")) = 0;
  virtual std::vector<Assignment> poll(Time now, const std::vector<InstanceView>& views) = 0;
  virtual Time next_wakeup() const { return kNever; }
  virtual bool early_assignment() const { return false; }
  virtual size_t pending() const = 0;  // submitted, not yet assigned

  // Notifications (see the contract above); the default ignores them.
  virtual void on_cancelled(Id request, Time now) {}
  virtual void on_prefill_done(Id request, Id instance, Time now) {}
  virtual void on_token(Id request, Id instance, Tokens generated, Time now) {}
  virtual void on_finished(Id request, Id instance, Time now) {}
  virtual void on_instance_added(Id instance, Role role, Time now) {}
  virtual void on_instance_removed(Id instance, Time now) {}

  // Ids seen through the checked entry points (policy/checked_calls.h); unused by the simulator.
  IdLedger& ledger() { return ledger_; }

 private:
  IdLedger ledger_;
};

// The predicted end of r's prefill if placed now on the instance with view v (the
// expected_handoff of early assignment): the instance's busy time, its queued prefills
// (`queued_prefill_s`, their summed prefill cost in queue order; the simulator's engine keeps
// it as a running sum) and r's own uncached prefill, by the view's latency model.
inline Time expected_handoff(const InstanceView& v, const Request& r, Time now, double queued_prefill_s) {
  const Tokens hit = r.prefix.empty() ? 0 : v.cached_prefix_tokens(prompt_block_hashes(r, v.block_size));
  const Time start = std::max(now, v.busy_until);
  return start + queued_prefill_s + v.model.overhead() + v.model.prefill_cost(r.prompt_len - hit, hit);
}

inline Time expected_handoff(const InstanceView& v, const Request& r, Time now) {
  double queued = 0.0;
  for (const RequestState& w : v.waiting) queued += v.model.prefill_cost(w.to_compute(), 0);
  return expected_handoff(v, r, now, queued);
}

}  // namespace slocore
