// SortedBlocks (EDF's and slo_triage's waiting order, core/sorted_blocks.h) against std::set
// over random inserts, erases and lower_bound probes: keys that tie on the first field,
// probes below and above every key, blocks small enough that every insert splits and every
// erase merges, and the set emptied and refilled; walked forward and backward.
#include <cstdint>
#include <iterator>
#include <random>
#include <set>
#include <vector>

#include "slocore/core/sorted_blocks.h"

#include "check.h"

using namespace slocore;

struct Key {  // EDF's WaitKey's shape: a deadline, ties by queue position
  double deadline = 0.0;
  int64_t seq = 0;
  bool operator<(const Key& o) const { return deadline != o.deadline ? deadline < o.deadline : seq < o.seq; }
  bool operator==(const Key& o) const { return deadline == o.deadline && seq == o.seq; }
};

template <size_t kBlock>
void check_against_set(std::mt19937_64& rng, int rounds, int max_ops) {
  std::uniform_int_distribution<int> deadline(0, 40);  // many ties
  std::uniform_int_distribution<int64_t> seq(-50, 400);
  auto key = [&] { return Key{double(deadline(rng)) / 4, seq(rng)}; };
  for (int round = 0; round < rounds; ++round) {
    SortedBlocks<Key, kBlock> blocks;
    std::set<Key> ref;
    const int ops = 1 + int(rng() % unsigned(max_ops));
    const unsigned erase_share = 1 + unsigned(rng() % 3);  // grow, hold, or shrink to empty
    for (int j = 0; j < ops; ++j) {
      const Key k = key();
      if (rng() % 4 < erase_share) {
        CHECK(blocks.erase(k) == (ref.erase(k) > 0));
      } else {
        CHECK(blocks.insert(k) == ref.insert(k).second);
      }
      CHECK(blocks.size() == ref.size() && blocks.empty() == ref.empty());
      if (j % 16 == 0 || j == ops - 1) {
        CHECK(std::vector<Key>(blocks.begin(), blocks.end()) == std::vector<Key>(ref.begin(), ref.end()));
        std::vector<Key> backward;  // walked from the end (EDF's victims, the latest deadline first)
        for (auto it = blocks.end(); it != blocks.begin();) backward.push_back(*--it);
        CHECK(backward == std::vector<Key>(ref.rbegin(), ref.rend()));
        for (int p = 0; p < 8; ++p) {
          const Key probe{double(deadline(rng) - 2) / 4, seq(rng) - 10};  // some below and above all
          auto a = blocks.lower_bound(probe);
          auto r = ref.lower_bound(probe);
          CHECK((a == blocks.end()) == (r == ref.end()));
          if (a != blocks.end() && r != ref.end()) CHECK(*a == *r);
          CHECK(std::distance(a, blocks.end()) == std::distance(r, ref.end()));
          if (a != blocks.begin() && r != ref.begin()) CHECK(*std::prev(a) == *std::prev(r));
        }
      }
    }
    blocks.clear();
    CHECK(blocks.empty() && blocks.begin() == blocks.end() && blocks.lower_bound(key()) == blocks.end());
    CHECK(!blocks.erase(key()) && blocks.insert(key()) && blocks.size() == 1);
  }
}

// EDF's pattern: the smallest key leaves and a later one joins, round after round, so that each
// block's room at the front grows and its buffer fills at the back (the room dropped then).
template <size_t kBlock>
void check_front_erases(std::mt19937_64& rng, int rounds) {
  SortedBlocks<Key, kBlock> blocks;
  std::set<Key> ref;
  int64_t seq = 0;
  for (int i = 0; i < 300; ++i) {
    const Key k{double(rng() % 50), seq++};
    CHECK(blocks.insert(k) == ref.insert(k).second);
  }
  for (int round = 0; round < rounds; ++round) {
    const Key first = *ref.begin();
    CHECK(*blocks.begin() == first);
    CHECK(blocks.erase(first) && ref.erase(first) == 1);
    const Key later{first.deadline + double(rng() % 60), seq++};  // behind some, ahead of others
    CHECK(blocks.insert(later) == ref.insert(later).second);
    if (round % 97 == 0)
      CHECK(std::vector<Key>(blocks.begin(), blocks.end()) == std::vector<Key>(ref.begin(), ref.end()));
  }
  CHECK(blocks.size() == ref.size());
  CHECK(std::vector<Key>(blocks.begin(), blocks.end()) == std::vector<Key>(ref.begin(), ref.end()));
}

int main() {
  std::mt19937_64 rng(11);
  check_against_set<4>(rng, 200, 600);  // a split or a merge at almost every step
  check_against_set<8>(rng, 100, 2000);
  check_against_set<256>(rng, 20, 20000);  // the default: a few blocks
  check_front_erases<8>(rng, 5000);
  check_front_erases<64>(rng, 20000);  // EDF's running order
  return check_summary("test_sorted_blocks");
}
