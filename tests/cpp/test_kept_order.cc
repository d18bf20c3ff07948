// The running side of the schedulers that keep state across an engine's calls: KeptRunning
// (batch/kept_running.h) against a stable sort of `running` by key, followed through an
// engine's changes as the engine reports them (tokens move keys, requests leave from
// anywhere, preempted ones go, admissions are appended; keys with ties) and read whole from
// views no engine makes (shuffled, an id twice, NaN) or whose changes disagree with them;
// follow_running (batch/kept_order.h) against what the change was: the admitted ones handed
// to `admit`, the preempted ones named in running order, and false for views that are not
// such a change.
#include <algorithm>
#include <cmath>
#include <random>
#include <utility>
#include <vector>

#include "slocore/batch/kept_order.h"
#include "slocore/batch/kept_running.h"

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

std::vector<std::pair<double, size_t>> kept_sorted(KeptRunning& kept, const InstanceView& v) {
  std::vector<std::pair<double, size_t>> out;
  for (const KeptRunning::Entry& e : kept.order()) {
    const RequestState* s = kept.find(v, e);
    size_t at = size_t(-1);
    for (size_t i = 0; s && i < v.running.size(); ++i)
      if (&v.running[i] == s) at = i;
    out.push_back({e.key, at});
  }
  return out;
}

void check_kept_running(std::mt19937_64& rng) {
  for (int round = 0; round < 40; ++round) {
    KeptRunning kept;
    InstanceView v;
    Id next = 1;
    bool by_changes = false;
    for (int call = 0; call < 300; ++call) {
      auto& run = v.running;
      ViewChanges& c = v.changes;
      c = ViewChanges{};
      const int what = int(rng() % 20);
      if (what < 12) {  // an iteration: some get a token (key up, ties likely), some leave or are preempted, some join
        std::vector<RequestState> stay;
        for (RequestState& s : run) {
          const int fate = int(rng() % 10);
          if (fate == 0) {
            kept.finished(s.request.id);
          } else if (fate == 1) {
            c.preempted.push_back(s.request.id);
          } else {
            if (rng() % 3 == 0) s.request.arrival += double(rng() % 4), c.progressed.push_back(s.request.id);
            stay.push_back(s);
          }
        }
        run.assign(stay.begin(), stay.end());
        for (int k = int(rng() % 4); k > 0; --k) {
          run.push_back(with_id(next, double(rng() % 30)));
          c.admitted.push_back(next++);
        }
        if (what == 0 && !c.admitted.empty()) c.admitted.front() += 1000;  // changes that disagree: read whole
        by_changes = true;
      } else if (what < 14 && run.size() > 1) {  // no engine's: shuffled
        std::shuffle(run.begin(), run.end(), rng);
        by_changes = false;
      } else if (what < 15 && !run.empty()) {  // no engine's: an id twice, refused; then read afresh
        InstanceView bad = v;
        const RequestState& twice = run[rng() % run.size()];
        bad.running.insert(bad.running.begin() + std::ptrdiff_t(rng() % (run.size() + 1)), &twice, &twice + 1);
        CHECK(!kept.follow(bad, false, key_of));
        by_changes = false;
      } else if (what < 16 && !run.empty()) {  // a NaN key: refused, then read afresh
        RequestState& s = run[rng() % run.size()];
        const double before = s.request.arrival;
        s.request.arrival = std::nan("");
        CHECK(!kept.follow(v, false, key_of));
        s.request.arrival = before;
        by_changes = false;
      }
      CHECK(kept.follow(v, by_changes, key_of));
      CHECK(kept_sorted(kept, v) == stable_sorted(v));
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
      v.running.assign(run.begin(), run.end());
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
  check_kept_running(rng);
  check_follow_running(rng);
  return check_summary("test_kept_order");
}
