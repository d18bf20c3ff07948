#include "slocore/hfx/scaler.h"

#include <algorithm>
#include <cmath>

namespace slocore::hfx {

void ScalerParams::validate() const {
  check_params(*this, "hfx");
  require(in_rate < out_rate, "hfx.in_rate", "must be in [0, out_rate)");
}

double kv_load(const InstanceView& v) {
  if (v.kv_blocks_total <= 0) return 0.0;
  int64_t reserved = 0;
  for (const RequestState& s : v.waiting) reserved += v.blocks_for(s.num_tokens());
  return double(v.kv_blocks_total - v.kv_blocks_free + reserved) / double(v.kv_blocks_total);
}

HfxScaler::HfxScaler(ScalerParams p) : p_(p) { p_.validate(); }

ParamMap HfxScaler::params() const { return write_params(p_); }

void HfxScaler::push(std::deque<Time>& q, Time t) { q.push_back(t); }

void HfxScaler::observe_lag(Pool& P, double x) {
  P.lag = P.has_lag ? (1 - p_.lag_alpha) * P.lag + p_.lag_alpha * x : x;
  P.has_lag = true;
}

void HfxScaler::on_arrival(const Request& r, Time now) {
  waiting_[r.id] = {r.arrival, r.slo.ttft};
  arrival_[r.id] = now;
  for (int k : {0, 1}) {
    if (pools_[k].first_in < 0) pools_[k].first_in = now;
    push(pools_[k].in, now);
  }
}

void HfxScaler::on_first_token(Id request, Time now) {
  waiting_.erase(request);
  if (auto it = arrival_.find(request); it != arrival_.end()) observe_lag(pools_[1], now - it->second);
  decode_start_[request] = now;
  decoding_[request] = true;
  if (pools_[2].first_in < 0) pools_[2].first_in = now;
  push(pools_[1].out, now);
  push(pools_[2].in, now);
}

void HfxScaler::on_finished(Id request, Time now) {
  if (auto it = arrival_.find(request); it != arrival_.end()) {
    observe_lag(pools_[0], now - it->second);
    arrival_.erase(it);
  }
  if (auto it = decode_start_.find(request); it != decode_start_.end()) {
    observe_lag(pools_[2], now - it->second);
    decode_start_.erase(it);
  }
  if (waiting_.erase(request)) push(pools_[1].out, now);  // finished without a token event
  if (decoding_.erase(request)) push(pools_[2].out, now);
  push(pools_[0].out, now);
}

HfxScaler::Indicators HfxScaler::indicators(int stage, Time now, const std::vector<InstanceView>& views) {
  Pool& P = pools_[stage];
  const double lag = P.has_lag ? std::min(P.lag, p_.window) : 0.0;
  while (!P.in.empty() && P.in.front() < now - p_.window - lag) P.in.pop_front();
  while (!P.out.empty() && P.out.front() < now - p_.window) P.out.pop_front();
  Indicators I;
  // Indicator 1 over equal spans: arrivals in [now-lag-s, now-lag], completions in [now-s, now].
  const double span = P.first_in < 0 ? 0.0 : std::min(p_.window, now - P.first_in - lag);
  if (P.has_lag && span > 0 && now - P.first_in >= p_.warmup) {
    const auto lo = std::lower_bound(P.in.begin(), P.in.end(), now - lag - span);
    const auto hi = std::upper_bound(P.in.begin(), P.in.end(), now - lag);
    const double n_in = double(hi - lo);
    const double n_out = double(P.out.end() - std::lower_bound(P.out.begin(), P.out.end(), now - span));
    if (n_in + n_out >= p_.min_samples && n_out > 0) {
      I.rate_valid = true;
      I.rate_ratio = n_in / n_out;
    } else if (n_in + n_out >= p_.min_samples) {  // arrivals, no completions at all
      I.rate_valid = true;
      I.rate_ratio = kNever;
    } else if (n_in == 0) {  // no arrivals in the window: excess capacity (rho = 0)
      I.rate_valid = true;
      I.rate_ratio = 0.0;
    }
  }
  if (stage != 2 && !waiting_.empty()) {  // indicator 2 (queued = no first token yet)
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      if (now - it->second.arrival > p_.forget_s) {
        arrival_.erase(it->first);
        it = waiting_.erase(it);
      } else {
        ++it;
      }
    }
  }
  if (stage != 2 && !waiting_.empty()) {
    double sum = 0.0;
    for (const auto& [id, w] : waiting_) {
      const double x = std::isfinite(w.ttft) ? (now - w.arrival) / w.ttft : 0.0;
      sum += x;
      I.max_wait = std::max(I.max_wait, x);
    }
    I.norm_wait = sum / double(waiting_.size());
  }
  const Role role = Role(stage);
  int n = 0;
  for (const InstanceView& v : views)
    if (v.role == role && v.accepting) I.kv_mean += kv_load(v), ++n;  // indicator 3
  if (n) I.kv_mean /= n;
  return I;
}

std::vector<ScaleDecision> HfxScaler::decide(Time now, const std::vector<InstanceView>& views) {
  bool pd = false;
  for (const InstanceView& v : views) pd = pd || v.role != Role::Colocated;
  std::vector<int> stages = pd ? std::vector<int>{1, 2} : std::vector<int>{0};
  int want[3] = {0, 0, 0};  // +1 out, -1 in
  bool spare[3] = {false, false, false};
  for (int s : stages) {
    const Indicators I = indicators(s, now, views);
    Pool& P = pools_[s];
    const bool rate_high = I.rate_valid && I.rate_ratio > p_.out_rate && (s == 2 || I.norm_wait >= p_.rate_wait);
    P.high_ticks = rate_high ? P.high_ticks + 1 : 0;
    const bool out = P.high_ticks >= p_.out_patience || I.norm_wait > p_.out_wait || I.kv_mean > p_.kv_high;
    // No queued request waits long (a decode pool has no queue to time: both waits are 0).
    const bool quiet = I.norm_wait < 0.5 * p_.out_wait && I.max_wait < 1.0;
    const bool low = I.rate_valid && I.rate_ratio < p_.in_rate && quiet && I.kv_mean < 0.5 * p_.kv_high;
    P.low_ticks = low ? P.low_ticks + 1 : 0;
    int n = 0;
    for (const InstanceView& v : views) n += v.role == Role(s) && v.accepting;
    spare[s] = !out && quiet && n > 1 && I.kv_mean * n / (n - 1) < 0.5 * p_.kv_high;
    if (out && now >= P.cooldown_until)
      want[s] = 1;
    else if (!out && P.low_ticks >= p_.in_patience)
      want[s] = -1;
  }
  auto victim = [&](Role role) {  // least KV-loaded accepting instance of a pool with > 1
    const InstanceView* best = nullptr;
    int n = 0;
    for (const InstanceView& v : views) {
      if (v.role != role || !v.accepting) continue;
      ++n;
      if (!best || kv_load(v) < kv_load(*best)) best = &v;
    }
    return n > 1 ? best : nullptr;
  };
  std::vector<ScaleDecision> out;
  // One pool shrinks and the other grows (HFX Sec. 6), or (borrow_spare) one grows and the
  // other has spare capacity: switch.
  const bool borrow = p_.borrow_spare && ((want[1] > 0 && spare[2]) || (want[2] > 0 && spare[1]));
  if (pd && p_.role_switch && (want[1] * want[2] == -1 || borrow)) {
    const int to = want[1] > 0 ? 1 : 2, from = 3 - to;
    if (const InstanceView* v = victim(Role(from))) {
      out.push_back({ScaleAction::SwitchRole, Role(to), v->id, {}});
      pools_[from].low_ticks = 0;
      pools_[to].cooldown_until = now + p_.cooldown;
      return out;
    }
  }
  for (int s : stages) {
    if (want[s] > 0) {
      out.push_back({ScaleAction::ScaleOut, Role(s), kNoInstance, {}});
      pools_[s].cooldown_until = now + p_.cooldown;
      pools_[s].high_ticks = 0;
    } else if (want[s] < 0) {
      if (const InstanceView* v = victim(Role(s))) {
        out.push_back({ScaleAction::ScaleIn, Role(s), v->id, {}});
        pools_[s].low_ticks = 0;
      }
    }
  }
  return out;
}

}  // namespace slocore::hfx
