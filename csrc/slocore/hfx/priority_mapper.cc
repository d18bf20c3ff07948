#include "slocore/hfx/priority_mapper.h"

#include <algorithm>
#include <cmath>

namespace slocore::hfx {

void MapperParams::validate() const {
  check_params(*this, "hfx_pm");
  require(!ttft_base.empty() && ttft_base.size() == tpot_base.size(), "hfx_pm.tpot_base",
          "need one TTFT and one TPOT per priority level");
}

PriorityMapper::PriorityMapper(MapperParams p) : p_(std::move(p)) {
  p_.validate();
  counts_.assign(size_t(p_.levels()), 0);
  last_q_.assign(size_t(p_.levels()), 0.0);
  has_last_q_.assign(size_t(p_.levels()), false);
}

void PriorityMapper::check(int priority) const {
  require(priority >= 0 && priority < p_.levels(), "priority",
          "must be in [0, " + std::to_string(p_.levels() - 1) + "], got " + std::to_string(priority));
}

std::pair<double, double> PriorityMapper::bounds_ttft(int priority) const {
  check(priority);
  const double b = p_.ttft_base[size_t(priority)];
  return {b * (1 - p_.spread), b * (1 + p_.spread)};
}

std::pair<double, double> PriorityMapper::bounds_tpot(int priority) const {
  check(priority);
  const double b = p_.tpot_base[size_t(priority)];
  return {b * (1 - p_.spread), b * (1 + p_.spread)};
}

int64_t PriorityMapper::index(int priority) const {
  check(priority);
  if (fifo_.empty()) return -1;
  int64_t base = 0;  // Eq. 6
  for (int i = 0; i < priority; ++i) base += counts_[size_t(i)];
  const int64_t n = p_.levels();
  const int64_t offset = int64_t(std::floor(double(priority + 1) / double(n + 1) * double(counts_[size_t(priority)])));
  return std::min<int64_t>(base + offset, int64_t(fifo_.size()) - 1);
}

std::pair<double, double> PriorityMapper::map(int priority, bool higher_pending) const {
  check(priority);
  const auto [tlo, thi] = bounds_ttft(priority);
  const auto [plo, phi] = bounds_tpot(priority);
  double ttft = p_.ttft_base[size_t(priority)], tpot = p_.tpot_base[size_t(priority)];
  const int64_t idx = index(priority);
  if (idx >= 0) {
    const auto& [t, q] = ttft_sorted_[size_t(idx)];
    ttft = t;
    tpot = tpot_sorted_[size_t(idx)];
    if (p_.queue_correction && has_last_q_[size_t(priority)]) ttft -= q - last_q_[size_t(priority)];
  }
  const double f = higher_pending ? 1.0 : p_.relaxed_min;  // contention rule
  return {std::clamp(ttft, tlo * f, thi), std::clamp(tpot, plo * f, phi)};
}

void PriorityMapper::record(int priority, double ttft, double queue_time, double tpot) {
  check(priority);
  require(std::isfinite(ttft) && ttft >= 0, "ttft", "must be finite and >= 0");
  require(std::isfinite(queue_time) && queue_time >= 0, "queue_time", "must be finite and >= 0");
  require(std::isfinite(tpot) && tpot >= 0, "tpot", "must be finite and >= 0");
  fifo_.push_back({priority, ttft, queue_time, tpot});
  ttft_sorted_.insert(std::upper_bound(ttft_sorted_.begin(), ttft_sorted_.end(), std::make_pair(ttft, queue_time)),
                      {ttft, queue_time});
  tpot_sorted_.insert(std::upper_bound(tpot_sorted_.begin(), tpot_sorted_.end(), tpot), tpot);
  ++counts_[size_t(priority)];
  if (int(fifo_.size()) > p_.window) {  // drop the oldest
    const Entry e = fifo_.front();
    fifo_.pop_front();
    ttft_sorted_.erase(std::lower_bound(ttft_sorted_.begin(), ttft_sorted_.end(), std::make_pair(e.ttft, e.qtime)));
    tpot_sorted_.erase(std::lower_bound(tpot_sorted_.begin(), tpot_sorted_.end(), e.tpot));
    --counts_[size_t(e.priority)];
  }
}

void PriorityMapper::on_dispatch(int priority, double queue_time) {
  check(priority);
  last_q_[size_t(priority)] = queue_time;
  has_last_q_[size_t(priority)] = true;
}

}  // namespace slocore::hfx
