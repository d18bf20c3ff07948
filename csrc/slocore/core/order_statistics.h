// Exact order statistics of a sequence of doubles read in passes instead of stored: a run's
// gaps between tokens (summarize's TBT) number about 200 per request, 200M for a 1M-request
// run, which a vector held at 1.6 GB before nth_element partitioned it. A radix selection on
// the doubles' bits finds the same values: two passes count the values by the first and the
// second 16 bits of their keys (the second only under the buckets that hold a wanted rank),
// a third collects the values under the wanted 32-bit prefixes (about 1e-6 of a binade
// each, so few but exact repeats), and nth_element picks among those.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace slocore {

// A double's bits as an unsigned integer in the same order (NaN excepted; -0.0 just below
// +0.0, which compare equal, so either may stand for a zero).
inline uint64_t order_key(double x) {
  uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b >> 63 ? ~b : b | (uint64_t(1) << 63);
}

// The values at `ranks` (0-based, each below the sequence's length) of the sequence sorted,
// in the order of `ranks`. for_each(f) calls f(x) for every value, the same values at every
// call (three calls), none NaN.
template <class ForEach>
std::vector<double> select_ranks(ForEach&& for_each, const std::vector<size_t>& ranks) {
  constexpr size_t kDigits = size_t(1) << 16;
  struct Want {
    uint64_t prefix = 0;  // the key's leading 16 (then 32) bits
    size_t rank = 0;      // among the values under that prefix
  };
  std::vector<Want> want(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) want[i].rank = ranks[i];
  // group_of[first 16 bits]: the index of that prefix among those a wanted rank lies under, or -1.
  std::vector<int> group_of(kDigits, -1);
  int groups = 0;
  std::vector<uint64_t> count;

  // One digit more for every wanted rank, from the counts of the values under its prefix.
  auto descend = [&](auto&& group_index) {
    for (Want& w : want) {
      const uint64_t* c = &count[group_index(w) * kDigits];
      uint64_t d = 0;
      for (; w.rank >= c[d]; ++d) w.rank -= c[d];
      w.prefix = (w.prefix << 16) | d;
    }
  };
  // Pass 1: the first 16 bits of every key.
  count.assign(kDigits, 0);
  for_each([&](double x) { ++count[order_key(x) >> 48]; });
  descend([](const Want&) { return size_t(0); });
  for (const Want& w : want)
    if (group_of[w.prefix] < 0) group_of[w.prefix] = groups++;

  // Pass 2: the next 16 bits, under the wanted first digits.
  count.assign(size_t(groups) * kDigits, 0);
  for_each([&](double x) {
    const uint64_t k = order_key(x);
    if (const int g = group_of[k >> 48]; g >= 0) ++count[size_t(g) * kDigits + ((k >> 32) & 0xffff)];
  });
  descend([&](const Want& w) { return size_t(group_of[w.prefix]); });

  // Pass 3: the values under the wanted 32-bit prefixes.
  std::vector<uint64_t> finals;
  for (const Want& w : want)
    if (std::find(finals.begin(), finals.end(), w.prefix) == finals.end()) finals.push_back(w.prefix);
  std::vector<std::vector<double>> under(finals.size());
  for_each([&](double x) {
    const uint64_t k = order_key(x);
    if (group_of[k >> 48] < 0) return;
    for (size_t f = 0; f < finals.size(); ++f)
      if (finals[f] == k >> 32) under[f].push_back(x);
  });
  std::vector<double> out(want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    std::vector<double>& v = under[size_t(std::find(finals.begin(), finals.end(), want[i].prefix) - finals.begin())];
    const auto nth = v.begin() + std::ptrdiff_t(want[i].rank);
    std::nth_element(v.begin(), nth, v.end());
    out[i] = *nth;
  }
  return out;
}

}  // namespace slocore
