// slo_triage: the slocore stack's engine scheduler. vLLM's priority scheduler
// (baselines/vllm_priority.h: running first, waiting by (priority, arrival)) with overload
// triage against EDF's and FCFS's domino effect: a request that can no longer meet its
// first-token deadline (ProServe Eq. 3: arrival + TTFT) must not push feasible requests past
// theirs. Each iteration the requests split into
//  * feasible: running requests whose first token came in time (or whose prefill can still
//    make it), and waiting requests predicted to make it;
//  * late: the first token came late or not before the deadline, which has passed, or the
//    latency model predicts it past the deadline even with `margin` taken off the prediction.
// A waiting request's first token is predicted behind the feasible prefill work ahead of it
// (running prefills, then feasible waiting requests in (priority, arrival) order; every
// workload shares one TTFT SLO per priority level, so within a level this is deadline order): T tokens
// take ceil(T / budget) iterations, each with the fixed cost and one decode step of the
// running decodes (ProServe Eq. 5-7 with the instance's model), plus the prefill cost of T
// tokens in full chunks. Count-optimal split (`count_optimal`; Moore-Hodgson, Moore 1968: in
// deadline order, when the current job would be late, drop the longest job taken so far): when
// a waiting request is predicted late, the longest feasible waiting request of its priority
// level (ties: the newest) becomes late instead if it has more prefill tokens to compute and
// taking them out of the work ahead makes the current one feasible. Running requests and higher
// levels are never demoted; below capacity nothing is predicted late and the split is the
// greedy one. The plan is vLLM's priority scheduler keyed (late, priority,
// arrival): the running pass (feasible, then late, each in running order) with preemption of
// late requests first, then the lowest (priority, arrival), newest (on a decode instance the
// most banked TPOT, below); then, only when nothing was preempted, waiting requests
// (feasible, then late, each by (priority, arrival); by first token on a decode instance,
// below) until the first that does not fit. Late requests are never dropped: they run from
// the budget left and count as misses. TPOT guard (`tpot_guard`): the prefill tokens of an
// iteration are capped so that its predicted time (fixed cost, one step of the running
// decodes, the prefill tokens as one chunk; ProServe Eq. 5-7) stays within (1 - margin) of
// the tightest TPOT SLO of the on-time running decodes (the same allowance for model error as
// the late test: aimed at the SLO itself, every mixed step lands on it and any error or a
// running prefill's chunk pushes the decodes past it); running prefills are planned first, waiting requests
// get what is left (at least one iteration's progress is always made).
// Two more waits, both measured by the instance's own rates (instance_rates.h):
//  * KV (`kv_wait`): where the KV blocks, not the prefill compute, bound the queue (long chat
//    histories), a waiting request also waits until the blocks of the feasible work ahead of
//    it and its own come free, at the net rate the instance frees them; its wait is the longer
//    of the two, and Moore-Hodgson's "longest" is the larger of its own prefill time and its
//    blocks' time at that rate.
//  * Priority (`priority_wait`): the work of higher levels that arrives while a request waits
//    goes ahead of it too, so its wait stretches by 1 / (1 - sigma), sigma the share of the
//    instance's time the higher levels' arriving prefill work takes (the preemptive priority
//    queue's stretch; at sigma >= 0.95 the stretch is capped at 20x).
// Decode pacing (`decode_pacing`; SLICE Alg. 3, per-request decode rates, the decode mask):
// when one step of every running decode alone exceeds what the tightest on-time TPOT SLO
// allows ((1 - margin) x that SLO, less the fixed cost), on-time decodes with a looser, finite
// TPOT SLO that are ahead of their own pace sit the step out, most ahead first, until it fits.
// TPOT is judged as the mean gap between tokens, so a request's pace is its first token plus
// (1 - margin) x its TPOT SLO per token since; it is ahead when, skipped now, its next token
// (two steps away) still comes by then. A request behind its pace, a late one, one without a
// TPOT SLO and any at the tightest SLO always decode; with a single TPOT SLO nothing is paced.
// Strict TPOT (`strict_tpot`, off by default): the guard's cap applies to running prefills
// too (by default a running prefill takes all the budget it fits, so a prompt admitted with a
// small first chunk runs the rest in one long step), and an iteration may run until the first
// on-time decode's next token is due on its pace, never less than the per-step cap; running
// decodes are planned before running prefills. It keeps short, tight-TPOT outputs on time at
// the cost of prefill speed (docs/benchmark.md, "Decode pacing on SLICE's mix").
// Late slack (`late_slack`; slack stealing, Lehoczky & Ramos-Thuel 1992, across classes): a
// late waiting request goes behind its own level's feasible requests but ahead of the lower
// levels' when every one of those has a looser TTFT SLO than its own and keeps its predicted
// first token in time with the late work ahead of it (e tokens counted as at most
// ceil(e / chunk) + 1 full iterations, their blocks at the release rate). A late interactive
// request then waits for the on-time interactive ones, not for batch requests seconds from
// their deadline too. Within one SLO it changes nothing: past capacity, stealing a level's own
// slack cost attainment (docs/benchmark.md, "Where `slocore` loses"). A stolen request still
// leaves `late_kv_room` of the KV free, and is passed over when it does not.
// Freshest handoff first: on a decode instance (P/D) every waiting request is past its first
// token, and TPOT is the mean gap from that token, so its wait for a decode slot is charged to
// its TPOT over an output length nobody knows yet: a request that has waited w since its first
// token meets a TPOT SLO s at a decode step t only if its output is longer than about
// w / (s - t). Most outputs are short, so the fresher the handoff the likelier it still is to
// make it: within a priority level (and feasible before late, as everywhere) the decode queue
// goes by first-token time, newest first, where vLLM's order is arrival (`fresh_handoffs`).
// An overloaded queue then loses the requests that waited longest, which make it only when
// their outputs are long, not every short one behind it. Where the client sees a handoff's
// first token only with its first decode step (InstanceView::first_token_at_decode: vLLM's
// P/D proxy protocol), its wait counts against its TTFT instead: a handoff whose TTFT
// deadline is still ahead goes first, earliest deadline first, and only those past it go
// freshest first (newest arrivals first would make the oldest on-time ones miss at loads the
// queue could serve in order: docs/design.md 4.6).
// Banked TPOT first out (`slack_victims`): for the same reason a decode that has run ahead of
// its TPOT SLO has banked the difference, (tokens - 1) x SLO - time since its first token,
// and can stall that long and still be on pace. When a decode instance's KV runs out it
// preempts (after late requests and lower priority levels, as vLLM's order does) the decode
// with the most banked, which can best afford the recompute and the wait, where vLLM
// preempts the newest arrival: often a fresh handoff with nothing banked. Colocated
// instances keep vLLM's victims (there the choice moved attainment by -0.6 to +0.2 points).
// Alone it gains nothing (by arrival the preempted request comes straight back); with the
// fresh order the banked request waits at the back and spends what it banked
// (docs/benchmark.md, "Freshest handoff first, banked TPOT first out").
// The predicted prefill runs in chunks of what the TPOT guard lets an iteration take. A
// preempted request whose first token came in time waits for its recompute only: it is not
// predicted, nor demoted. A waiting request is admitted only when its whole remaining prompt
// fits in the free KV (vLLM admits a first chunk, and under KV pressure the rest then
// preempts someone), and a late one only when it leaves `late_kv_room` of the KV free: a late
// request holds its blocks through its whole decode, which the on-time arrivals of the next
// seconds need.
// Cost: the waiting queue is read only when the batch has room for some of it; a queue with no
// first token to predict (resumed or late requests only) is split in one pass and ordered
// lazily, as admission takes from it (a heap of the keys), the same plan as a full stable sort.
// A decode instance's queue in P/D (handed-off requests: their first tokens came) is kept split
// and ordered across the engine's calls (batch/kept_queue.h): per call only the running
// requests, the queue's new front and tail and the requests admission takes are read. So is
// any queue once a split finds nothing in it to predict (a burst's backlog past its deadlines),
// until a request arrives with a first token to predict.
#pragma once
#include <optional>
#include <tuple>
#include <vector>

#include "slocore/batch/kept_queue.h"
#include "slocore/batch/plan_builder.h"
#include "slocore/batch/priority_order.h"
#include "slocore/stack/instance_rates.h"

namespace slocore::stack {

struct SloTriageParams {
  Tokens token_budget = 0;  // 0: the engine's max_batch_tokens
  double margin = 0.2;  // late when now + (1 - margin) x predicted wait >= deadline; TPOT guard at (1 - margin) x SLO
  bool tpot_guard = true;       // cap prefill tokens so the iteration fits the on-time decodes' TPOT SLO
  bool count_optimal = true;    // Moore-Hodgson within a priority level: demote the longest feasible waiting request
  bool kv_wait = true;          // a waiting request also waits for the KV blocks of the work ahead of it
  bool priority_wait = true;    // ... and for the higher levels' work that arrives while it waits
  double rate_window_s = 10.0;  // time constant of the measured rates
  double late_kv_room = 0.3;    // a late request is admitted only when it leaves this share of the KV free
  bool decode_pacing = true;    // SLICE's decode rates: looser-TPOT decodes ahead of pace skip a too-long step
  bool strict_tpot = false;     // the TPOT guard caps running prefills too, to the on-time decodes' pace
  bool late_slack = true;       // a late request goes ahead of lower levels with looser SLOs and slack to spare
  bool fresh_handoffs = true;   // a decode instance's queue by first-token time, newest first (not arrival)
  bool slack_victims = true;    // a decode instance preempts the decode with the most banked TPOT first
  template <class V>
  void visit(V& v) {
    v.field("token_budget", token_budget, "tokens per iteration; 0 = the engine's max_batch_tokens",
            Range::at_least(0));
    v.field("margin", margin,
            "relative error allowed to the predictions: late only if late with the wait scaled by (1 - margin); "
            "the TPOT guard aims an iteration at (1 - margin) x the TPOT SLO",
            Range::closed(0.0, 1.0));
    v.field("tpot_guard", tpot_guard,
            "cap an iteration's prefill tokens so its predicted time fits the tightest TPOT SLO of the on-time "
            "running decodes");
    v.field("count_optimal", count_optimal,
            "Moore-Hodgson within a priority level: when a waiting request would be late, demote the level's "
            "longest feasible waiting request if it is longer and that makes the current one feasible");
    v.field("kv_wait", kv_wait,
            "a waiting request also waits until the KV blocks of the feasible work ahead of it and its own come "
            "free, at the rate the instance frees them");
    v.field("priority_wait", priority_wait,
            "a waiting request's wait stretches by 1 / (1 - the share of time the higher priority levels' arriving "
            "prefill work takes)");
    v.field("rate_window_s", rate_window_s, "time constant (s) of the measured KV release rate and arriving work",
            Range::above(0.0));
    v.field("late_kv_room", late_kv_room, "admit a late request only when it leaves this share of the KV blocks free",
            Range::closed(0.0, 1.0));
    v.field("decode_pacing", decode_pacing,
            "when one step of every running decode exceeds the tightest on-time TPOT SLO, on-time decodes with a "
            "looser TPOT SLO that are ahead of their own pace skip the step, most ahead first, until it fits "
            "(SLICE's per-request decode rates)");
    v.field("strict_tpot", strict_tpot,
            "the TPOT guard caps running prefills' chunks too (by default a running prefill takes all the budget it "
            "fits), and lets an iteration run until the first on-time decode's next token is due on its pace, never "
            "less than the per-step cap: for TPOT-critical classes with short outputs, at some TTFT");
    v.field("late_slack", late_slack,
            "a late waiting request goes ahead of the lower priority levels' feasible ones when they all have a "
            "looser TTFT SLO and keep their predicted first tokens in time (slack stealing across classes)");
    v.field("fresh_handoffs", fresh_handoffs,
            "a decode instance's waiting requests go by first-token time, newest first, instead of arrival: the wait "
            "before a handoff's decode counts against its TPOT, which the freshest are likeliest still to meet (where "
            "the client sees the first token at the decode, those with their TTFT deadline ahead go first, by it)");
    v.field("slack_victims", slack_victims,
            "a decode instance preempts, after late and lower-priority requests, the decode with the most banked "
            "TPOT ((tokens - 1) x TPOT SLO - time since its first token) instead of the newest arrival");
  }
};

class SloTriageScheduler : public BatchScheduler {
 public:
  explicit SloTriageScheduler(SloTriageParams p = {}) : p_(p), rates_(p.rate_window_s) {}
  std::string name() const override { return "slo_triage"; }
  ParamMap params() const override { return write_params(SloTriageParams{p_}); }
  BatchPlan schedule(const InstanceView& v, Time now) override;
  void on_finished(Id request, Time now) override {
    rates_.finished(request, now);
    kept_.finished(request);
  }

 private:
  // What the waiting queue's first tokens wait behind: the running decodes' step and the
  // feasible running prefills' work, in chunks the TPOT guard allows, at the KV release rate.
  struct QueueAhead {
    double decode_s = 0.0;  // one decode step of the running decodes
    Tokens tokens = 0;      // prefill tokens the feasible running prefills have yet to compute
    int64_t blocks = 0;     // ... and the KV blocks they have yet to take
    Tokens chunk = 1;       // prefill tokens per iteration
    double kv_rate = 0.0;   // blocks/s the instance frees (0: not measured or kv_wait off)
  };
  // The triage of the waiting queue into feasible and late requests, each handed out by
  // (priority, queue_place).
  // `stolen`: per request `feasible` hands out, in order, whether it is a late one with the
  // lower levels' slack (late_slack).
  void split_waiting(const InstanceView& v, Time now, const QueueAhead& q, PriorityArrivalOrder& feasible,
                     PriorityArrivalOrder& late, std::vector<char>& stolen);
  // The plan, with the waiting requests taken from the kept queue when `kept`; nullopt when
  // the kept queue disagrees with v.
  std::optional<BatchPlan> plan(const InstanceView& v, Time now, bool kept);
  // A kept waiting request's order: feasible before late, then (priority, queue_place), then queue order.
  struct KeptKey {
    bool late = false;
    int priority = 0;
    Time order_time = 0.0;  // queue_place's t (its group is 0 where a queue is kept)
    int64_t seq = 0;
    Id id = 0;
    bool operator<(const KeptKey& o) const {
      return std::tie(late, priority, order_time, seq) < std::tie(o.late, o.priority, o.order_time, o.seq);
    }
  };
  SloTriageParams p_;
  InstanceRates rates_;
  KeptQueue<KeptKey> kept_;
  bool all_settled_ = false;  // the last split found no waiting request with a first token to predict
};

// A running decode's banked TPOT: (generated - 1) x its TPOT SLO less the time since its first
// token (how long it can stall and stay on pace); -inf without a first token or a TPOT SLO.
double banked_tpot_s(const RequestState& s, Time now);
// A waiting request's place within its priority level, by (group, t): its arrival, or with
// `fresh` on a decode instance, minus its first token's time (freshest handoff first, above);
// where the first token is seen at the decode, a handoff's TTFT deadline while it is ahead of
// `now` (group 0), else minus its first token's time (group 1).
struct QueuePlace {
  int group = 0;
  Time t = 0.0;
};
QueuePlace queue_place(const InstanceView& v, const RequestState& s, bool fresh, Time now);
// Predicted time of `tokens` prefill tokens on v in chunks of `budget`, each iteration also
// carrying `decode_s` (one step of the running decodes) and the fixed cost.
double predicted_prefill_s(const InstanceView& v, Tokens tokens, Tokens budget, double decode_s);
// The most prefill tokens (0..budget) whose one-chunk cost fits `limit_s` (bisection; the cost
// grows with the tokens).
Tokens max_prefill_tokens(const InstanceView& v, double limit_s, Tokens budget);
// How far ahead of its pace an on-time decode is (see above): its next token's paced due time less now.
double paced_slack(const RequestState& s, double margin, Time now);
// Decode pacing: per running request whether it sits this step out (see above); `decode_s`
// (one step of the running decodes) comes back less the skipped ones' decodes.
std::vector<char> paced_out(const InstanceView& v, Time now, const std::vector<char>& run_late, double tpot_min,
                            double margin, double& decode_s);

}  // namespace slocore::stack
