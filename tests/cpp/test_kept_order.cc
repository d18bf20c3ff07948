// The running side of the schedulers that keep state across an engine's calls: RunningOrder
// (batch/running_order.h) against a stable sort of `running` by key, through engine-like
// changes (tokens move keys, requests leave from anywhere, admissions are appended; keys
// with ties) and views no engine makes (shuffled, an id twice, NaN); follow_running
// (batch/kept_order.h) against what the change was: the admitted ones handed to `admit`,
// the preempted ones named in running order, and false for views that are not such a change.
#include <algorithm>
#include <cmath>
#include <random>
#include <utility>
#include <vector>

#include "slocore/batch/kept_order.h"
#include "slocore/batch/running_order.h"

#include "check.h"

using namespace slocore;

namespace {

RequestState with_id(Id id, double key) {
  RequestState s;
  s.request.id = id;
  s.request.arrival = key;  // the test's key
  return s;
}
double key_of(const RequestState& s) { return s.request.arrival; }

std::vector<std::pair<double, size_t>> stable_sorted(const InstanceView& v) {
  std::vector<std::pair<double, size_t>> out;
  for (size_t i = 0; i < v.running.size(); ++i) out.push_back({key_of(v.running[i]), i});
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

void check_running_order(std::mt19937_64& rng) {
  for (int round = 0; round < 40; ++round) {
    RunningOrder order;
    InstanceView v;
    Id next = 1;
    for (int call = 0; call < 300; ++call) {
      auto& run = v.running;
      const int what = int(rng() % 20);
      if (what < 12) {  // an iteration: some get a token (key up, ties likely), some leave, some join
        for (RequestState& s : run)
          if (rng() % 3 == 0) s.request.arrival += double(rng() % 4);
        std::vector<RequestState> kept;
        for (RequestState& s : run)
          if (rng() % 10 != 0) kept.push_back(s);
        run = kept;
        for (int k = int(rng() % 4); k > 0; --k) run.push_back(with_id(next++, double(rng() % 30)));
      } else if (what < 14 && run.size() > 1) {  // no engine's: shuffled
        std::shuffle(run.begin(), run.end(), rng);
      } else if (what < 15 && !run.empty()) {  // no engine's: an id twice
        run.insert(run.begin() + std::ptrdiff_t(rng() % run.size()), run[rng() % run.size()]);
      } else if (what < 16 && !run.empty()) {  // a NaN key: refused, then read afresh
        RequestState& s = run[rng() % run.size()];
        const double before = s.request.arrival;
        s.request.arrival = std::nan("");
        CHECK(!order.update(v, key_of));
        s.request.arrival = before;
      }
      CHECK(order.update(v, key_of));
      CHECK(order.sorted() == stable_sorted(v));
    }
  }
}

struct Kept {
  bool running = false;
};

void check_follow_running(std::mt19937_64& rng) {
  for (int round = 0; round < 40; ++round) {
    IdSlab<Kept> kept;
    InstanceView v;
    std::vector<Id> last, preempted;
    Id next = 1;
    for (int step = 0; step < 200; ++step) {
      // The engine's change: finished ones leave, preempted ones go to the queue's front (in
      // running order), waiting ones are admitted to the end, arrivals are appended.
      std::vector<RequestState> run, front;
      std::vector<Id> want_preempted, want_admitted;
      for (const RequestState& s : v.running) {
        const int fate = int(rng() % 12);
        if (fate == 0) {
          kept.erase(s.request.id);  // finished: on_finished forgets it
        } else if (fate == 1) {
          front.push_back(s);
          want_preempted.push_back(s.request.id);
        } else {
          run.push_back(s);
        }
      }
      WaitingQueue waiting;
      for (const RequestState& s : v.waiting)
        if (rng() % 4 == 0 && run.size() < 64) {
          run.push_back(s);
          want_admitted.push_back(s.request.id);
        } else {
          waiting.push_back(s);
        }
      waiting.insert(waiting.begin(), front.begin(), front.end());
      for (int k = int(rng() % 5); k > 0; --k) {
        waiting.push_back(with_id(next, 0.0));
        kept.emplace(next++, Kept{false});
      }
      v.running = run;
      v.waiting = waiting;
      std::vector<Id> admitted;
      auto admit = [&](Id id, Kept& k) {
        admitted.push_back(id);
        k.running = true;
      };
      auto set_running = [](Id, Kept& k) { k.running = true; };
      const int hostile = int(rng() % 10);
      size_t survivors = 0;  // the running requests that ran at the last call lead `running`
      while (survivors < v.running.size() &&
             std::find(last.begin(), last.end(), v.running[survivors].request.id) != last.end())
        ++survivors;
      if (hostile == 0 && survivors > 1) {  // two of them swapped
        InstanceView bad = v;
        std::swap(bad.running[0], bad.running[survivors - 1]);
        std::vector<Id> p;
        IdSlab<Kept> copy = kept;
        CHECK(!follow_running(bad, copy, last, set_running, p));
      } else if (hostile == 1 && !v.running.empty()) {  // an id twice
        InstanceView bad = v;
        bad.running.push_back(bad.running.front());
        std::vector<Id> p;
        IdSlab<Kept> copy = kept;
        CHECK(!follow_running(bad, copy, last, set_running, p));
      } else if (hostile == 3 && survivors > 0 && survivors < v.running.size()) {  // admitted ahead of one that ran
        InstanceView bad = v;
        std::swap(bad.running[survivors - 1], bad.running[survivors]);
        std::vector<Id> p;
        IdSlab<Kept> copy = kept;
        CHECK(!follow_running(bad, copy, last, set_running, p));
      } else if (hostile == 2) {  // an unknown id running
        InstanceView bad = v;
        bad.running.push_back(with_id(next + 1000, 0.0));
        std::vector<Id> p;
        IdSlab<Kept> copy = kept;
        CHECK(!follow_running(bad, copy, last, set_running, p));
      }
      CHECK(follow_running(v, kept, last, admit, preempted));
      CHECK(admitted == want_admitted);
      CHECK(preempted == want_preempted);
      for (Id id : preempted) kept.at(id).running = false;  // the scheduler keeps them as waiting again
      last.clear();
      for (const RequestState& s : v.running) last.push_back(s.request.id);
    }
  }
}

}  // namespace

int main() {
  std::mt19937_64 rng(5);
  check_running_order(rng);
  check_follow_running(rng);
  return check_summary("test_kept_order");
}
