#include "slocore/policy/checked_calls.h"

#include "slocore/core/errors.h"
#include "slocore/core/input_checks.h"

namespace slocore::checked {

namespace {

// A notification about (request, instance) at `now`.
void check_event(GlobalPolicy& p, Id request, Id instance, Time now, bool ledger) {
  check_time(now, "now");
  check_id(instance, "instance");
  if (ledger) p.ledger().check_known(request);
}

}  // namespace

void submit(GlobalPolicy& p, const Request& r, Time now, Time expected_handoff, bool ledger) {
  validate(r);
  check_time(now, "now");
  check_optional_time(expected_handoff, "expected_handoff");
  if (ledger) p.ledger().check_new(r.id);
  p.submit(r, now, expected_handoff);
  if (ledger) p.ledger().add(r.id);
}

std::vector<Assignment> poll(GlobalPolicy& p, Time now, const std::vector<InstanceView>& views, bool ledger) {
  check_time(now, "now");
  check_views(views);
  std::vector<Assignment> out = p.poll(now, views);
  if (ledger)
    for (const Assignment& a : out) p.ledger().assigned(a.request, a.instance);
  return out;
}

void on_cancelled(GlobalPolicy& p, Id request, Time now, bool ledger) {
  check_time(now, "now");
  if (ledger) p.ledger().check_known(request);
  p.on_cancelled(request, now);
  if (ledger) p.ledger().finished(request);
}

void on_prefill_done(GlobalPolicy& p, Id request, Id instance, Time now, bool ledger) {
  check_event(p, request, instance, now, ledger);
  p.on_prefill_done(request, instance, now);
}

void on_token(GlobalPolicy& p, Id request, Id instance, Tokens generated, Time now, bool ledger) {
  check_event(p, request, instance, now, ledger);
  check_tokens(generated, "generated", 1);
  p.on_token(request, instance, generated, now);
}

void on_finished(GlobalPolicy& p, Id request, Id instance, Time now, bool ledger) {
  check_event(p, request, instance, now, ledger);
  p.on_finished(request, instance, now);
  if (ledger) p.ledger().finished(request);
}

void on_instance_added(GlobalPolicy& p, Id instance, Role role, Time now, bool ledger) {
  check_time(now, "now");
  check_id(instance, "instance");
  if (ledger) p.ledger().check_new_instance(instance);
  p.on_instance_added(instance, role, now);
  if (ledger) p.ledger().add_instance(instance);
}

void on_instance_removed(GlobalPolicy& p, Id instance, Time now, bool ledger) {
  check_time(now, "now");
  check_id(instance, "instance");
  if (ledger) p.ledger().check_known_instance(instance);
  p.on_instance_removed(instance, now);
  if (ledger) p.ledger().remove_instance(instance);
}

BatchPlan schedule(BatchScheduler& s, const InstanceView& engine, Time now) {
  check_time(now, "now");
  check_view(engine);
  return s.schedule(engine, now);
}

void on_batch_done(BatchScheduler& s, const InstanceView& engine, const BatchPlan& plan, double predicted_s,
                   double actual_s, Time now) {
  check_time(now, "now");
  check_view(engine);
  check_duration(predicted_s, "predicted_s");
  check_duration(actual_s, "actual_s");
  for (const ScheduledItem& it : plan.items) {
    check_id(it.request, "plan.items.request");
    check_tokens(it.tokens, "plan.items.tokens", 1);
  }
  for (Id id : plan.preempt) check_id(id, "plan.preempt");
  s.on_batch_done(engine, plan, predicted_s, actual_s, now);
}

void on_finished(BatchScheduler& s, Id request, Time now) {
  check_time(now, "now");
  check_id(request, "request");
  s.on_finished(request, now);
}

void on_arrival(Scaler& s, const Request& r, Time now, bool ledger) {
  validate(r);
  check_time(now, "now");
  if (ledger) s.ledger().check_new(r.id);
  s.on_arrival(r, now);
  if (ledger) s.ledger().add(r.id);
}

void on_first_token(Scaler& s, Id request, Time now, bool ledger) {
  check_time(now, "now");
  if (ledger) s.ledger().check_known(request);
  s.on_first_token(request, now);
}

void on_finished(Scaler& s, Id request, Time now, bool ledger) {
  check_time(now, "now");
  if (ledger) s.ledger().check_known(request);
  s.on_finished(request, now);
  if (ledger) s.ledger().finished(request);
}

std::vector<ScaleDecision> decide(Scaler& s, Time now, const std::vector<InstanceView>& views) {
  check_time(now, "now");
  check_views(views);
  return s.decide(now, views);
}

}  // namespace slocore::checked
