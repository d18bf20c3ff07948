// The checked entry points of the three contracts (global policy, batch scheduler, scaler)
// for untrusted callers: the Python bindings and C++ embedders. Each validates its input
// (times finite and >= 0, views valid, ids known), keeps the object's IdLedger in step,
// then calls the contract's method. The simulator, a trusted caller, calls the methods
// directly. Errors: InvalidArgument (ValueError) or UnknownId (KeyError) naming the field.
#pragma once
#include <vector>

#include "slocore/batch/batch_scheduler.h"
#include "slocore/policy/global_policy.h"
#include "slocore/scale/scaler.h"

namespace slocore::checked {

// Global policies. `ledger` is false for a policy whose methods are not the C++ ones (a
// Python subclass, whose overrides Python calls directly): then only the arguments are checked.
void submit(GlobalPolicy& p, const Request& r, Time now, Time expected_handoff, bool ledger = true);
std::vector<Assignment> poll(GlobalPolicy& p, Time now, const std::vector<InstanceView>& views, bool ledger = true);
void on_cancelled(GlobalPolicy& p, Id request, Time now, bool ledger = true);
void on_prefill_done(GlobalPolicy& p, Id request, Id instance, Time now, bool ledger = true);
void on_token(GlobalPolicy& p, Id request, Id instance, Tokens generated, Time now, bool ledger = true);
void on_finished(GlobalPolicy& p, Id request, Id instance, Time now, bool ledger = true);
void on_instance_added(GlobalPolicy& p, Id instance, Role role, Time now, bool ledger = true);
void on_instance_removed(GlobalPolicy& p, Id instance, Time now, bool ledger = true);

// Batch schedulers: they learn requests from the view, so only arguments are checked.
BatchPlan schedule(BatchScheduler& s, const InstanceView& engine, Time now);
void on_batch_done(BatchScheduler& s, const InstanceView& engine, const BatchPlan& plan, double predicted_s,
                   double actual_s, Time now);
void on_finished(BatchScheduler& s, Id request, Time now);

// Scalers: a request arrives once, then its first token and finish refer to it.
void on_arrival(Scaler& s, const Request& r, Time now, bool ledger = true);
void on_first_token(Scaler& s, Id request, Time now, bool ledger = true);
void on_finished(Scaler& s, Id request, Time now, bool ledger = true);
std::vector<ScaleDecision> decide(Scaler& s, Time now, const std::vector<InstanceView>& views);

}  // namespace slocore::checked
