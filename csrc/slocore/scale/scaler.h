// Scaler contract: reads indicators, answers scale-out, scale-in and role-switch decisions.
// The caller applies them (the simulator with cold starts, the live launcher with real
// processes) and calls decide() every interval().
//
// The event contract (ids and `now` as in policy/global_policy.h: one id per request, the
// caller's clock):
// * on_arrival(r, now): once per request, when it arrives (before any policy sees it).
// * on_first_token(id, now): when the request's first output token is produced (in P/D,
//   on the prefill instance).
// * on_finished(id, now): once, when the request's last token is produced. Live only (the
//   router, python/slocore/serve/scaler.py): a request that leaves unfinished (rejected,
//   failed, client gone) gets on_finished when it leaves, so it does not stay queued.
// * decide(now, views): every interval() seconds from the start, with the views of the
//   instances in the pools (ready ones; starting and draining ones are not listed).
//   Scale-out adds an instance that joins its pool after its cold start; scale-in and role
//   switches drain the instance first (it gets no new work) and the caller ignores a
//   decision that names an instance no longer active or would drain a pool below its floor.
#pragma once
#include <string>
#include <vector>

#include "slocore/core/id_ledger.h"
#include "slocore/core/instance_view.h"
#include "slocore/core/params.h"

namespace slocore {

enum class ScaleAction { ScaleOut = 0, ScaleIn = 1, SwitchRole = 2 };

struct ScaleDecision {
  ScaleAction action = ScaleAction::ScaleOut;
  Role role = Role::Colocated;  // pool to grow (ScaleOut) or the new role (SwitchRole)
  Id instance = kNoInstance;    // instance to drain (ScaleIn) or switch (SwitchRole)
  std::string profile;          // ScaleOut: hardware profile by name ("": the pool's default)
};

class Scaler {
 public:
  virtual ~Scaler() = default;
  virtual std::string name() const = 0;
  virtual ParamMap params() const { return {}; }
  virtual Time interval() const { return 1.0; }
  virtual void on_arrival(const Request& r, Time now) {}
  virtual void on_first_token(Id request, Time now) {}
  virtual void on_finished(Id request, Time now) {}
  virtual std::vector<ScaleDecision> decide(Time now, const std::vector<InstanceView>& views) = 0;

  // Ids seen through the checked entry points (policy/checked_calls.h); unused by the simulator.
  IdLedger& ledger() { return ledger_; }

 private:
  IdLedger ledger_;
};

}  // namespace slocore
