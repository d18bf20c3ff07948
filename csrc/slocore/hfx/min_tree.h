// A segment tree of minima over positions 0..n-1: point updates and "the first position at
// or after `from` whose value is <= x" in O(log n). The HFX dispatcher uses it to skip the
// queued requests a scan would pass over without effect.
#pragma once
#include <cstddef>
#include <limits>
#include <vector>

namespace slocore::hfx {

class MinTree {
 public:
  static constexpr double kNone = std::numeric_limits<double>::infinity();

  // n positions, all kNone.
  void reset(size_t n) {
    n_ = n;
    size_ = 1;
    while (size_ < n) size_ *= 2;
    t_.assign(2 * size_, kNone);
  }
  size_t size() const { return n_; }
  void set(size_t i, double v) {
    size_t k = i + size_;
    t_[k] = v;
    for (k /= 2; k >= 1; k /= 2) t_[k] = t_[2 * k] < t_[2 * k + 1] ? t_[2 * k] : t_[2 * k + 1];
  }
  // Leaves set directly, then build() once: O(n).
  void put(size_t i, double v) { t_[i + size_] = v; }
  void build() {
    for (size_t k = size_ - 1; k >= 1; --k) t_[k] = t_[2 * k] < t_[2 * k + 1] ? t_[2 * k] : t_[2 * k + 1];
  }
  // First position p >= from with value <= x; size() when none. kNone never matches (x is
  // capped below it); a NaN x matches nothing.
  size_t first_at_most(size_t from, double x) const {
    if (from >= n_) return n_;
    if (x > std::numeric_limits<double>::max()) x = std::numeric_limits<double>::max();
    const size_t p = find(1, 0, size_, from, x);
    return p < n_ ? p : n_;
  }

 private:
  size_t find(size_t node, size_t lo, size_t hi, size_t from, double x) const {
    if (hi <= from || !(t_[node] <= x)) return n_;
    if (hi - lo == 1) return lo;
    const size_t mid = (lo + hi) / 2;
    const size_t p = find(2 * node, lo, mid, from, x);
    return p < n_ ? p : find(2 * node + 1, mid, hi, from, x);
  }
  size_t n_ = 0, size_ = 1;
  std::vector<double> t_ = std::vector<double>(2, kNone);
};

}  // namespace slocore::hfx
