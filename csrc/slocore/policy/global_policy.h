// Global policy contract (DESIGN.md "Contracts"): which instance gets a request, and when.
// Push policies (RR, least-load, GoRouting, SIBYL) decide at submit and hand the decision
// out at the next poll; pull policies (HFX dispatcher, migrator) keep a queue and release
// batches when an instance matures, telling the caller when to poll via next_wakeup().
// In P/D serving there are two: the prefill policy gets requests on arrival, the decode
// policy at handoff (prefill done) or, when early_assignment() is true (SIBYL), at prefill
// start with the predicted handoff time.
#pragma once
#include <cmath>
#include <string>
#include <vector>

#include "slocore/core/id_ledger.h"
#include "slocore/core/instance_view.h"
#include "slocore/core/params.h"

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

  // Notifications; the default ignores them.
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

}  // namespace slocore
