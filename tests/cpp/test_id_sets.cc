// The flat id table of one engine iteration or plan (IdIndex, also PlanBuilder's id set)
// against std::unordered_map over random inserts, lookups and clears (growth, stamp reuse,
// negative and extreme ids; fresh tables used without a first clear); FlatIndex (the
// engine's holds, the prefix cache's blocks) the same way with erases too (backward shift
// over wrapped runs of equal home slots); and SIBYL's survival lookup against its floor()
// definition.
#include <climits>
#include <cmath>
#include <random>
#include <unordered_map>
#include <vector>

#include "slocore/core/flat_index.h"
#include "slocore/core/id_index.h"
#include "slocore/sibyl/survival.h"

#include "check.h"

using namespace slocore;

// Random inserts, erases and lookups against std::unordered_map; keys from `pool`.
template <KeyBits kBits>
void check_flat_index(std::mt19937_64& rng, const std::vector<uint64_t>& pool) {
  using Index = FlatIndex<kBits>;
  std::uniform_int_distribution<size_t> pick(0, pool.size() - 1);
  for (int round = 0; round < 50; ++round) {
    Index index;
    std::unordered_map<uint64_t, uint32_t> ref;
    const int ops = 200 + int(rng() % 3000);
    for (int j = 0; j < ops; ++j) {
      const uint64_t key = pool[pick(rng)];
      const uint32_t v = uint32_t(rng() % 1000);
      if (rng() % 3 == 0) {
        CHECK(index.erase(key) == (ref.erase(key) > 0));
      } else {
        auto [it, added] = ref.emplace(key, v);
        CHECK(index.insert(key, v) == (added ? Index::kNone : it->second));
      }
      CHECK(index.size() == ref.size());
    }
    for (uint64_t key : pool) {
      auto it = ref.find(key);
      CHECK(index.find(key) == (it == ref.end() ? Index::kNone : it->second));
    }
    size_t seen = 0;
    index.for_each([&](uint64_t key, uint32_t v) {
      CHECK(ref.at(key) == v);
      ++seen;
    });
    CHECK(seen == ref.size());
    index.clear();
    CHECK(index.empty() && !index.contains(pool[0]));
  }
}

int main() {
  std::mt19937_64 rng(7);
  std::vector<Id> pool = {0, 1, -1, INT64_MIN, INT64_MAX, 64, 128, 4096};
  for (int i = 0; i < 300; ++i) pool.push_back(Id(rng()));
  for (int i = 0; i < 300; ++i) pool.push_back(Id(i * 64));  // same low bits
  std::uniform_int_distribution<size_t> pick(0, pool.size() - 1);

  IdIndex index;
  for (int round = 0; round < 2000; ++round) {
    const size_t n = round % 7 == 0 ? 600 : size_t(rng() % 40);  // grows now and then
    index.clear(round % 3 == 0 ? n : 1);                         // an expected size too small: grows
    std::unordered_map<Id, int64_t> ref;
    for (size_t j = 0; j < n; ++j) {
      const Id id = pool[pick(rng)];
      const int64_t v = int64_t(rng() % 1000);
      CHECK(index.insert(id, v) == ref.emplace(id, v).second);
    }
    for (Id id : pool) {
      const int64_t* got = index.find(id);
      auto it = ref.find(id);
      CHECK((got != nullptr) == (it != ref.end()));
      if (got && it != ref.end()) CHECK(*got == it->second);
    }
  }

  for (int round = 0; round < 200; ++round) {
    IdIndex set;  // as PlanBuilder uses it: fresh, never cleared, values unused
    std::unordered_map<Id, int> ref;
    const size_t n = size_t(rng() % 500);
    for (size_t j = 0; j < n; ++j) {
      const Id id = pool[pick(rng)];
      set.insert(id, 0);
      ref[id] = 1;
    }
    for (Id id : pool) CHECK(set.contains(id) == (ref.count(id) > 0));
  }

  std::vector<uint64_t> keys = {0, 1, UINT64_MAX, uint64_t(INT64_MIN)};
  for (int i = 0; i < 400; ++i) keys.push_back(rng());
  for (uint64_t i = 0; i < 400; ++i) keys.push_back(i);                 // ids: consecutive
  for (uint64_t i = 0; i < 400; ++i) keys.push_back(i << 20);           // the same low bits: one run for Mixed
  for (uint64_t i = 0; i < 100; ++i) keys.push_back(~uint64_t(0) - i);  // homes at the table's end: runs wrap
  check_flat_index<KeyBits::Mixed>(rng, keys);
  check_flat_index<KeyBits::Sequential>(rng, keys);

  // survival_prepared (SurvivalEstimator::Table, what SIBYL's sum reads) finds the bucket by
  // truncation: the same value as floor(len / bucket).
  for (Tokens bucket : {64, 48, 1, 7}) {
    sibyl::SurvivalEstimator est(bucket, 0.9, 4096);
    for (int i = 0; i < 200; ++i) est.observe(int(rng() % 5000));
    const std::vector<double> s = est.values();
    std::uniform_real_distribution<double> len(-10.0, 6000.0);
    for (int i = 0; i < 20000; ++i) {
      const double l = i % 5 == 0 ? double(int64_t(len(rng))) : len(rng);
      double want = 1.0;
      if (l >= double(bucket)) want = s[size_t(std::min(std::floor(l / double(bucket)), double(est.buckets())))];
      CHECK(est.survival(l) == want);
    }
    CHECK(est.survival(INFINITY) == s.back());
    CHECK(est.survival(NAN) == 1.0);
  }
  return check_summary("test_id_sets");
}
