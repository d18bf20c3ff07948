// QueuePositions (batch/queue_positions.h) against a sorted set of the seqs present, over
// random front inserts (one to three at a time), appends and removals with little spare room,
// so that the tree grows at the back many times and a front insert outside its room is
// refused; the seqs it gives out against counters of the queue's two ends. Then the engine's
// index of its own queue (sim/waiting_positions.h) against a search of the queue itself,
// through appends, front inserts past its spare room (rebuilds) and removals anywhere. And
// the boxed queue the index reads (core/waiting_queue.h) against a std::deque of ids.
#include <algorithm>
#include <cstdint>
#include <deque>
#include <iterator>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "slocore/batch/queue_positions.h"
#include "slocore/core/waiting_queue.h"
#include "slocore/sim/waiting_positions.h"

#include "check.h"

using namespace slocore;

void check_waiting_positions(std::mt19937_64& rng) {
  for (int round = 0; round < 20; ++round) {
    sim::WaitingPositions at;
    WaitingQueue q;
    Id next_id = round % 2 ? 0 : 1'000'000'000'000;  // the index mixes ids: any range
    auto state = [&] {
      RequestState s;
      s.request.id = next_id++;
      return s;
    };
    for (int op = 0; op < 3000; ++op) {
      const int what = int(rng() % 10);
      if (what < 4) {
        q.push_back(state());
        at.appended(q);
      } else if (what < 6) {  // preempted requests back at the front: past 1,024 of them a rebuild
        const size_t k = 1 + rng() % 40;
        std::vector<RequestState> front;
        for (size_t j = 0; j < k; ++j) front.push_back(state());
        q.insert(q.begin(), front.begin(), front.end());
        at.prepended(q, k);
      } else if (!q.empty()) {
        const size_t i = rng() % q.size();
        at.removed(q[i].request.id);
        q.erase(q.begin() + std::ptrdiff_t(i));
      }
      if (op % 50 == 0 || q.size() < 8) {
        for (size_t i = 0; i < q.size(); ++i) CHECK(at.find(q, q[i].request.id) == i);
        CHECK(at.find(q, next_id) == sim::WaitingPositions::npos);  // never queued
      }
    }
  }
}

// Every operation the engine and the bindings use, with the ids in a std::deque beside.
void check_waiting_queue(std::mt19937_64& rng) {
  const std::string task = "a task name longer than the string's inline buffer";  // a move must carry it
  auto state = [&](Id id) {
    RequestState s;
    s.request.id = id;
    s.request.task = task;
    return s;
  };
  auto same = [&](const WaitingQueue& q, const std::deque<Id>& ids) {
    if (q.size() != ids.size() || q.end() - q.begin() != std::ptrdiff_t(ids.size())) return false;
    size_t i = 0;
    for (const RequestState& s : q) {  // iteration, and random access both ways
      const bool ok = s.request.id == ids[i] && q[i].request.id == ids[i] &&
                      (q.begin() + std::ptrdiff_t(i))->request.id == ids[i] && s.request.task == task;
      if (!ok) return false;
      ++i;
    }
    return true;
  };
  WaitingQueue q;
  std::deque<Id> ids;
  Id next = 1;
  for (int op = 0; op < 4000; ++op) {
    const int what = int(rng() % 8);
    if (what < 3) {
      q.push_back(state(next)), ids.push_back(next++);
    } else if (what == 3) {  // preempted requests back at the front, moved in
      std::vector<RequestState> front;
      for (size_t k = 1 + rng() % 4; k > 0; --k) front.push_back(state(next++));
      for (auto it = front.rbegin(); it != front.rend(); ++it) ids.push_front(it->request.id);
      if (rng() % 2) {
        q.insert(q.begin(), std::make_move_iterator(front.begin()), std::make_move_iterator(front.end()));
      } else {  // as the engine does: boxes handed over
        std::vector<RequestBox> boxes;
        for (RequestState& s : front) boxes.push_back(std::make_unique<RequestState>(std::move(s)));
        q.prepend(boxes);
        CHECK(boxes.empty());
      }
    } else if (what == 4 && !ids.empty()) {
      const size_t i = rng() % ids.size();
      q.erase(q.begin() + std::ptrdiff_t(i)), ids.erase(ids.begin() + std::ptrdiff_t(i));
    } else if (what == 5 && !ids.empty()) {  // admissions: sorted distinct positions, handed over in order
      std::vector<size_t> at;
      for (size_t i = 0; i < ids.size(); ++i)
        if (rng() % 5 == 0) at.push_back(i);
      std::vector<Id> taken, expect;
      for (size_t i : at) expect.push_back(ids[i]);
      q.take_boxes(at, [&](RequestBox b) {
        CHECK(b && b->request.task == task);
        taken.push_back(b->request.id);
      });
      for (auto it = at.rbegin(); it != at.rend(); ++it) ids.erase(ids.begin() + std::ptrdiff_t(*it));
      CHECK(taken == expect);
    } else if (what == 6) {  // a copy is deep: changing it leaves the original
      WaitingQueue c = q;
      CHECK(same(c, ids));
      if (!c.empty()) c.front().request.id = 0, c.erase(c.begin());
      CHECK(same(q, ids));
    } else if (what == 7 && ids.size() > 50) {
      q.erase(q.begin() + 10, q.begin() + 20), ids.erase(ids.begin() + 10, ids.begin() + 20);
    }
    CHECK(same(q, ids));
  }
  // Moves hand the boxes over: none lost, none freed twice (CI's ASan build checks both).
  WaitingQueue m = std::move(q);
  CHECK(same(m, ids) && q.empty());
  q = std::move(m);
  CHECK(same(q, ids) && m.empty());
  q = WaitingQueue{state(5)};
  CHECK(q.size() == 1 && q.front().request.id == 5);
  RunningBatch r = {state(1), state(2), state(3)};
  std::vector<Id> left;
  r.take_boxes({0, 2}, [&](RequestBox b) { left.push_back(b->request.id); });
  CHECK(r.size() == 1 && r.front().request.id == 2 && left == std::vector<Id>({1, 3}));
  WaitingQueue l = {state(7), state(8)};
  CHECK(l.size() == 2 && l.front().request.id == 7 && l.back().request.id == 8);
  l.clear();
  CHECK(l.empty());
}

int main() {
  std::mt19937_64 rng(11);
  check_waiting_queue(rng);
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
        CHECK(pos.take_back() == back);
        pos.add(back);
        present.insert(back++);
      } else if (what < 5) {  // preemptions, the queue's new front, in order
        const size_t k = 1 + rng() % 3;
        int64_t first = 0;
        if (!pos.take_front(k, first)) {
          CHECK(front - int64_t(k) < -(n + spare));
          continue;
        }
        front -= int64_t(k);
        CHECK(first == front);
        for (size_t j = 0; j < k; ++j) {
          pos.add(first + int64_t(j));
          present.insert(first + int64_t(j));
        }
      } else if (!present.empty()) {  // an admission or a cancel, from anywhere
        auto it = std::next(present.begin(), std::ptrdiff_t(rng() % present.size()));
        pos.remove(*it);
        present.erase(it);
      }
      CHECK(pos.front() == front && pos.back() == back);
      CHECK(pos.slot(back - 1) < pos.slots() || present.empty());
      size_t index = 0;
      for (int64_t seq : present) CHECK(pos.rank(seq) == index++);
    }
  }
  check_waiting_positions(rng);
  return check_summary("test_queue_positions");
}
