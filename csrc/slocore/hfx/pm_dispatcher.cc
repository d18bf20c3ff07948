#include "slocore/hfx/pm_dispatcher.h"

#include <algorithm>

namespace slocore::hfx {

PmDispatcher::PmDispatcher(const PmParams& p) : inner_(p.dispatcher, "hfx_pm"), mapper_(p.mapper) {
  require(inner_.config().role == Role::Colocated, "hfx_pm.role",
          "priority mapping needs completions, so it runs on the colocated dispatcher only");
  queued_.assign(size_t(mapper_.config().levels()), 0);
}

ParamMap PmDispatcher::params() const { return write_params(PmParams{inner_.config(), mapper_.config()}); }

void PmDispatcher::submit(const Request& r, Time now, Time expected_handoff) {
  validate(r);
  require(!track_.count(r.id), "request.id", "duplicate id " + std::to_string(r.id) + " in hfx_pm");
  // Priorities beyond the configured levels share the lowest level.
  const int prio = std::clamp(r.priority, 0, mapper_.config().levels() - 1);
  bool higher = false;
  for (int i = 0; i < prio; ++i) higher = higher || queued_[size_t(i)] > 0;
  const auto [ttft, tpot] = mapper_.map(prio, higher);
  Request m = r;
  m.slo.ttft = ttft;
  m.slo.tpot = tpot;
  inner_.submit(m, now, expected_handoff);
  Track t;
  t.priority = prio;
  t.arrival = r.arrival;
  track_.emplace(r.id, t);
  ++queued_[size_t(prio)];
  assigned_.emplace_back(r.id, ttft, tpot);
  if (assigned_.size() > kKeepAssigned) assigned_.pop_front();
}

std::vector<Assignment> PmDispatcher::poll(Time now, const std::vector<InstanceView>& views) {
  std::vector<Assignment> out = inner_.poll(now, views);
  for (const Assignment& a : out) {
    Track& t = track_.at(a.request);
    t.dispatched = now;
    --queued_[size_t(t.priority)];
    mapper_.on_dispatch(t.priority, now - t.arrival);
  }
  return out;
}

void PmDispatcher::on_cancelled(Id request, Time now) {
  auto it = track_.find(request);
  if (it == track_.end()) return;
  if (it->second.dispatched < 0) --queued_[size_t(it->second.priority)];
  track_.erase(it);
  inner_.on_cancelled(request, now);
}

void PmDispatcher::on_token(Id request, Id, Tokens generated, Time now) {
  auto it = track_.find(request);
  if (it == track_.end()) return;
  it->second.generated = generated;
  if (generated == 1) it->second.first = now;
}

void PmDispatcher::on_finished(Id request, Id, Time now) {
  auto it = track_.find(request);
  if (it == track_.end()) return;
  const Track& t = it->second;
  if (t.first >= 0 && t.dispatched >= 0 && t.generated > 1)
    mapper_.record(t.priority, t.first - t.arrival, t.dispatched - t.arrival,
                   (now - t.first) / double(t.generated - 1));
  track_.erase(it);
}

}  // namespace slocore::hfx
