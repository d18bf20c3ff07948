// QueuePositions (batch/queue_positions.h) against a sorted set of the seqs present, over
// random front inserts, appends and removals with little spare room, so that the tree grows
// at the back many times and a front insert outside its room is refused.
#include <cstdint>
#include <iterator>
#include <random>
#include <set>
#include <vector>

#include "slocore/batch/queue_positions.h"

#include "check.h"

using namespace slocore;

int main() {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 300; ++round) {
    const int64_t n = int64_t(rng() % 20), spare = 1 + int64_t(rng() % 4);
    QueuePositions pos;
    pos.reset(n, spare);
    std::set<int64_t> present;
    int64_t front = 0, back = 0;
    for (; back < n; ++back)
      if (rng() % 4 != 0) {  // some of the first seqs left before the first call
        pos.add(back);
        present.insert(back);
      }
    for (int op = 0; op < 400; ++op) {
      const uint64_t what = rng() % 10;
      if (what < 4) {  // an arrival, appended
        pos.add(back);
        present.insert(back++);
      } else if (what < 5) {  // a preemption, the queue's new front
        if (!pos.fits_front(front - 1)) {
          CHECK(front - 1 < -(n + spare));
          continue;
        }
        pos.add(--front);
        present.insert(front);
      } else if (!present.empty()) {  // an admission or a cancel, from anywhere
        auto it = std::next(present.begin(), std::ptrdiff_t(rng() % present.size()));
        pos.remove(*it);
        present.erase(it);
      }
      CHECK(pos.slot(back - 1) < pos.slots() || present.empty());
      size_t index = 0;
      for (int64_t seq : present) CHECK(pos.rank(seq) == index++);
    }
  }
  return check_summary("test_queue_positions");
}
