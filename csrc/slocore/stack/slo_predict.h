// The slocore stack's global policy: dispatch on a per-request latency prediction for every
// candidate instance (docs/policies.md "slo_predict").
//
// For request r and instance v it predicts, with v's own latency model (its hardware, its
// online correction; ProServe Eq. 5-7):
//  * the prefill work ahead of r in v's engine: the remaining prefills of v's running and
//    waiting requests (and of those this poll already placed there) whose first-token
//    deadline (ProServe Eq. 3) is not later than r's, in that order ("deadline", the order
//    of the SlideBatching/EDF engines the stack runs), or all of them ("fifo");
//  * r's own prefill of its uncached prompt tokens (the cached prefix on v is not
//    recomputed, so cache affinity enters as predicted time, not as a weight). Cached on v:
//    what v's view knows (the engine's blocks, or the router's approximate index), or, if
//    longer, the prompt blocks of the unfinished requests this policy placed there, which v
//    computes before r (a chat session's next turn, sent while the previous turn still
//    waits in the engine, would otherwise miss its history);
//  * the decode interference: each iteration of at most max_batch_tokens prefill tokens also
//    carries v's running decodes and the fixed cost (HFX Eq. 2 / ProServe Eq. 6-7);
//  * r's TPOT: one iteration of the decode batch it would join (v's decodes and pending
//    prefills, then r).
// From the finish times of every pending prefill with and without r it counts the first
// tokens r's placement would make late (r's own included): the predicted attainment loss.
// It picks the instance with the least loss, then the most normalised slack
// min((TTFT_slo - TTFT)/TTFT_slo, (TPOT_slo - TPOT)/TPOT_slo), then the earliest predicted
// first token, then the longest cached prefix, then the first in view order. Candidates whose
// predicted first token is within `margin` of that best one (same loss, on time when it is)
// count as equal: among them the one whose cached prefix saves the most predicted prefill
// time wins (prefill no engine has to run: capacity for every later request, which r's own
// prediction does not count), then the fewest outstanding requests. No per-poll
// token cap (the HFX Alg. 1 budget generalised to a prediction): every request is placed
// at once, so the engine scheduler sees and can reorder all of them. Requests with neither
// a TTFT nor a TPOT target get both from the HFX Alg. 2 priority mapper (HFX Sec. 5.2).
// On P/D prefill instances (role Prefill) there are no decodes and no TPOT prediction.
//
// `hold`: for engines that serve their queue in arrival order (vLLM's default scheduler), where
// a request placed at once waits in the engine behind every earlier one. The router keeps
// the requests instead and releases them by first-token deadline (the engine queue becomes
// an EDF queue one level up, HFX Sec. 4's held queue), each to the best instance whose
// predicted prefill backlog is under one full iteration (the engine never runs short of
// prefill work, and never holds more than it can start next; an instance holding r's prefix
// counts the prefill time that prefix saves r as room). Sessions stay where their history
// is, bounded by r's own SLO: among the instances with room, one whose cached prefix saves
// more than the best's, where r is on time with the margin to spare (normalised slack >=
// margin), counts as equal to the best (the room test bounds the queue this can build; without
// it, in the placing mode, it piles requests behind the cached instance); and when the instance
// whose cache saves r the most, r on time there with that margin, has no room yet while the
// one r would go to has prefill queued (it does not run dry meanwhile), r waits for it (delay
// scheduling for locality, Zaharia et al., EuroSys 2010), its prefill reserved there for the
// rest of the poll so that later requests predict behind it; the requests after r go on. A
// request predicted to miss its first-token deadline where it would go goes last, in arrival
// order (the triage of slo_triage, in the router). The backlog test replaces HFX's per-poll
// token cap: a prompt of any length goes as soon as one instance has room.
#pragma once
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "slocore/core/id_slab.h"
#include "slocore/core/prefix.h"
#include "slocore/hfx/priority_mapper.h"
#include "slocore/policy/push_policy.h"

namespace slocore::stack {

enum class QueueOrder { Deadline, Fifo };
inline const EnumNames<QueueOrder> kQueueOrders = {{"deadline", QueueOrder::Deadline}, {"fifo", QueueOrder::Fifo}};
enum class QueueMemo { Keep, Rescan, Check };
inline const EnumNames<QueueMemo> kQueueMemos = {
    {"keep", QueueMemo::Keep}, {"rescan", QueueMemo::Rescan}, {"check", QueueMemo::Check}};

struct SloPredictParams {
  QueueOrder order = QueueOrder::Deadline;
  bool map_priority = true;
  bool hold = false;
  double margin = 0.2;  // relative error of the prediction within which candidates are equal
  QueueMemo queue_memo = QueueMemo::Keep;
  hfx::MapperParams mapper;
  template <class V>
  void visit(V& v) {
    v.field("order", order,
            "engine queue order the prediction assumes: first-token deadline (SlideBatching/EDF) or fifo",
            kQueueOrders);
    v.field("map_priority", map_priority, "requests without TTFT and TPOT targets get them from HFX Alg. 2");
    v.field("hold", hold,
            "keep requests in the router and release them by first-token deadline to instances with under one "
            "iteration of prefill backlog (for engines that serve in arrival order)");
    v.field("margin", margin,
            "predicted first tokens within this relative margin of the best are equal: the most prefill time saved by "
            "the cached prefix wins, then the fewest outstanding",
            Range::at_least(0));
    v.field("queue_memo", queue_memo,
            "keep: each instance's prediction queue is kept between decisions and follows the engine's changes; "
            "rescan: every view is read whole at each decision (the same predictions, slower); check: both, an error "
            "on any difference (tests)",
            kQueueMemos);
    mapper.visit(v);
  }
  void validate() const;
};

// One pending prefill in an instance's queue: deadline of its next token, tokens to compute,
// their cost, and the context it will decode over (its prompt).
struct PendingPrefill {
  Time deadline = kNever;
  Tokens tokens = 0;
  double cost = 0.0;
  Tokens context = 0;
};

// The prediction for r on one instance (exposed for tests and the benchmark).
struct SloPrediction {
  double ttft = 0.0;        // predicted time to first token, from r's arrival, s
  double tpot = 0.0;        // predicted time per output token, s (0 on prefill instances)
  int64_t loss = 0;         // first tokens made late by placing r here, r's own included
  double slack = 0.0;       // min of the normalised TTFT and TPOT slack (+inf: no target)
  double finish = 0.0;      // predicted absolute time of r's first token
  Tokens cached = 0;        // r's prompt tokens cached on the instance
  double saved = 0.0;       // predicted prefill time the cached prefix saves: cost(prompt) - cost(uncached part), s
  int64_t outstanding = 0;  // requests on the instance (running, waiting, placed this poll)
};

// `extra`: prefills this poll already placed on v (the views lag behind the placements).
SloPrediction predict_slo(const SloPredictParams& p, const InstanceView& v, const Request& r, Tokens cached, Time now,
                          const std::vector<PendingPrefill>& extra);
// predict_slo's queue of one instance, kept between decisions: the pending prefills sorted as
// predict_slo sorts them (deadline, ties in queue order: running, waiting, this poll's
// placements), with the running folds of their costs and tokens, and the decode sums. While
// the view's epoch holds (InstanceView::epoch), appends to `waiting` and this poll's placements
// are inserted. When it changes, the queue follows the view's waiting log
// (InstanceView::waiting_log): the requests that left it go, those put back at its front and
// those appended come in, and only the running requests are read again; without a log (or
// after a new stream) it is rebuilt. predict() sums in predict_slo's order, so its result is
// bit-identical; it reads only the entries behind r that r can make late.
class PendingQueue {
 public:
  // Brings the memo up to v (+ `extra`, the placements of poll number `poll`); false when v
  // is not tracked (epoch 0) or a deadline is NaN: use predict_slo.
  bool sync(const SloPredictParams& p, const InstanceView& v, const std::vector<PendingPrefill>& extra, uint64_t poll);
  SloPrediction predict(const InstanceView& v, const Request& r, Tokens cached, Time now);

 private:
  enum class Kind : uint8_t { Running, Waiting, Placed };
  struct Entry {
    PendingPrefill p;
    int64_t seq;          // queue order
    Id id = -1;           // a running or waiting request
    Tokens computed = 0;  // its cost again under a new model: prefill_cost(p.tokens, computed)
    Kind kind = Kind::Placed;
    bool left = false;  // marked to leave
  };
  struct Slot {  // a waiting request in queue order, for the decode sum
    int64_t seq;
    Tokens context;
    double decode;
    bool left;
  };
  struct Key {
    Time deadline;
    int64_t seq;
  };
  void rebuild(const SloPredictParams& p, const InstanceView& v, const std::vector<PendingPrefill>& extra);
  bool follow(const InstanceView& v, bool same_model);  // false: rebuild
  // per_iter_ from v's running decodes; v's running prefills appended to `prefills`, in order.
  void read_running(const InstanceView& v, std::vector<Entry>& prefills);
  Entry waiting_entry(const LatencyModel& m, const RequestState& s, int64_t seq);
  bool before(const Entry& a, const Entry& b) const;  // q_'s order
  bool add(const Entry& x);                           // false: NaN deadline
  void drop_extras();
  void fold_to(size_t n);  // cost_/tokens_ valid for the first n entries
  QueueOrder order_ = QueueOrder::Deadline;
  bool prefill_only_ = false;
  uint64_t epoch_ = 0, poll_ = 0, stream_ = 0;
  size_t logged_ = 0;  // events of the waiting log's stream followed
  int64_t next_seq_ = 0, front_seq_ = 0, first_extra_seq_ = 0;
  LatencyCoeffs coeffs_;
  double beta_ = 0.0;
  static constexpr size_t kNone = size_t(-1);
  size_t waiting_ = 0, extras_ = 0, valid_ = 0;
  size_t first_negative_ = kNone;  // the first folded entry with a negative (or NaN) cost or tokens
  double per_iter_ = 0.0, tpot_base_ = 0.0, tpot_ = 0.0;  // tpot_: tpot_base_ + this poll's placements
  std::vector<Entry> q_;
  std::vector<Slot> slots_;      // the waiting requests, in queue order (seq)
  IdSlab<Key> where_;            // each waiting request's key in q_
  std::vector<Key> extra_keys_;  // this poll's placements
  std::vector<double> cost_;
  std::vector<Tokens> tokens_;
  std::vector<Key> gone_;     // follow(): scratch
  std::vector<Id> front_;     // follow(): scratch
  std::vector<Entry> fresh_;  // follow(): scratch
};

// True when a is the better placement (the lexicographic order above; ties keep the earlier).
bool better_placement(const SloPrediction& a, const SloPrediction& b);
// Index of the chosen prediction (see above), -1 when `preds` is empty. `slack_for_cache` (the
// held queue, whose room test keeps every instance's queue under one iteration): a candidate
// whose cached prefix saves more than the best's, where r is on time with the margin to spare
// (normalised slack >= margin), counts as equal too.
int choose_placement(const std::vector<SloPrediction>& preds, Time now, double margin, bool slack_for_cache = false);
// The held queue's room on v, s: one full iteration (the fixed cost, max_batch_tokens of
// prefill and v's running decodes) minus the predicted time until v has computed every pending
// prefill (running, waiting and this poll's `extra`) in full iterations of at most
// max_batch_tokens prefill tokens.
double held_room(const InstanceView& v, const std::vector<PendingPrefill>& extra, Time now);

class SloPredictPolicy : public PushPolicy {
 public:
  explicit SloPredictPolicy(SloPredictParams p);
  std::string name() const override { return "slo_predict"; }
  ParamMap params() const override;
  void submit(const Request& r, Time now, Time expected_handoff) override;
  std::vector<Assignment> poll(Time now, const std::vector<InstanceView>& views) override;
  size_t pending() const override { return PushPolicy::pending() + held_.size() + hopeless_.size(); }
  void on_cancelled(Id request, Time now) override;
  void on_prefill_done(Id request, Id instance, Time now) override;
  void on_token(Id request, Id instance, Tokens generated, Time now) override;
  void on_finished(Id request, Id instance, Time now) override;
  const hfx::PriorityMapper& mapper() const { return mapper_; }
  // The SLO the policy plans r with: its own, or the mapper's when it has neither target.
  Slo planning_slo(const Request& r) const;

 protected:
  int choose(const Request& r, Time now, const std::vector<InstanceView>& views) override;

 private:
  // The index of the instance for `planned` (r with its planning SLO) and its prediction
  // there, or -1; records nothing. With `room` (per view: one iteration minus the predicted
  // prefill backlog, s), only instances where room plus the prefill time r's cached prefix
  // saves there is positive. `cache`/`there` (optional): among all accepting instances, the one
  // whose cached prefix saves r the most prefill time, more than at the chosen one, where r is on
  // time with the margin to spare (normalised slack >= margin) and makes no more first tokens
  // late (ties: better_placement), or -1.
  // `chains`: planned's prompt block hashes (core/prefix.h), shared with placed_here.
  int choose_among(const Request& planned, PromptChains& chains, Time now, const std::vector<InstanceView>& views,
                   const std::vector<double>* room, SloPrediction& best, int* cache = nullptr,
                   SloPrediction* there = nullptr);
  std::vector<Assignment> poll_held(Time now, const std::vector<InstanceView>& views);
  void placed_here(const Request& r, const InstanceView& v, Tokens cached, PromptChains& chains);
  void reserve(const Request& r, const InstanceView& v, Tokens cached);  // r's prefill in v's queue, this poll
  struct Track {
    int priority = 0;
    Time arrival = 0.0, first = -1.0;
    Tokens generated = 0;
    Id instance = -1;              // where it was placed
    std::vector<uint64_t> blocks;  // its prompt's block chain there, in inflight_
  };
  void first_token(Track& t, Time now);
  // Leading blocks of `chain` that requests this policy placed on `instance` and that have not
  // finished will have computed (or hold) before r, queued after them, runs there.
  Tokens inflight_prefix_tokens(Id instance, const std::vector<uint64_t>& chain, int block_size) const;
  void release_blocks(Track& t);
  SloPredictParams p_;
  hfx::PriorityMapper mapper_;
  std::unordered_map<Id, std::vector<PendingPrefill>> placed_;  // this poll's placements
  std::unordered_map<Id, PendingQueue> queues_;                 // per instance, see PendingQueue
  uint64_t poll_ = 0;
  IdSlab<Track> track_;  // looked up at every token
  // Per instance: block hash -> unfinished requests placed there whose prompt has it. The engine's
  // cache (precise) knows a prompt's blocks only once computed, so without these a session's
  // next turn, sent while the previous one still waits in the engine, misses its history.
  std::unordered_map<Id, std::unordered_map<uint64_t, int>> inflight_;
  std::vector<int64_t> waiting_first_;  // per priority: placed, first token not yet out
  // `hold`: the on-time requests by (first-token deadline, arrival order), the hopeless ones
  // by arrival order, and where each id is.
  using HeldKey = std::pair<Time, uint64_t>;
  std::map<HeldKey, Request> held_;
  std::map<uint64_t, Request> hopeless_;
  std::unordered_map<Id, HeldKey> held_at_;
  uint64_t held_seq_ = 0;
};

}  // namespace slocore::stack
