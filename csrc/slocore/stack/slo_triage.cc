#include "slocore/stack/slo_triage.h"

#include "slocore/baselines/vllm_priority.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <queue>
#include <tuple>
#include <utility>

namespace slocore::stack {

double predicted_prefill_s(const InstanceView& v, Tokens tokens, Tokens budget, double decode_s) {
  if (tokens <= 0) return 0.0;
  if (budget <= 0) return kNever;  // nothing can run
  const Tokens full = tokens / budget, rest = tokens % budget;
  const Tokens iterations = full + (rest > 0 ? 1 : 0);
  double t = double(iterations) * (v.model.overhead() + decode_s);
  if (full > 0) t += double(full) * v.model.prefill_cost(budget, 0);
  if (rest > 0) t += v.model.prefill_cost(rest, 0);
  return t;
}

Tokens max_prefill_tokens(const InstanceView& v, double limit_s, Tokens budget) {
  if (!(limit_s >= v.model.prefill_cost(1, 0))) return 0;
  Tokens lo = 1, hi = budget;  // prefill_cost(lo) fits
  if (v.model.prefill_cost(hi, 0) <= limit_s) return hi;
  while (hi - lo > 1) {
    const Tokens mid = lo + (hi - lo) / 2;
    (v.model.prefill_cost(mid, 0) <= limit_s ? lo : hi) = mid;
  }
  return lo;
}

namespace {

// Whether a running request has a pace to keep: an on-time decode with a TPOT SLO.
bool has_pace(const RequestState& s, bool late) {
  return !s.in_prefill() && !late && std::isfinite(s.request.slo.tpot) && std::isfinite(s.first_token);
}

}  // namespace

// How far ahead of its pace an on-time decode is: the time its next token is due at (1 -
// margin) x its TPOT SLO per token since its first, less now.
double paced_slack(const RequestState& s, double margin, Time now) {
  return s.first_token + double(s.generated) * (1.0 - margin) * s.request.slo.tpot - now;
}

std::vector<char> paced_out(const InstanceView& v, Time now, const std::vector<char>& run_late, double tpot_min,
                            double margin, double& decode_s) {
  const auto& run = v.running;
  std::vector<char> out(run.size());
  const double target = (1.0 - margin) * tpot_min;  // the step the tightest on-time decode allows
  if (!(v.model.overhead() + decode_s > target)) return out;
  struct Ahead {
    double slack;  // its paced due time less now
    size_t i;
  };
  std::vector<Ahead> ahead;
  for (size_t i = 0; i < run.size(); ++i) {
    const RequestState& s = run[i];
    if (!has_pace(s, run_late[i]) || !(s.request.slo.tpot > tpot_min)) continue;
    ahead.push_back({paced_slack(s, margin, now), i});
  }
  std::stable_sort(ahead.begin(), ahead.end(), [](const Ahead& a, const Ahead& b) { return a.slack > b.slack; });
  for (const Ahead& a : ahead) {
    if (!(v.model.overhead() + decode_s > target)) break;
    const double cost = v.model.decode_cost(run[a.i].context_len());
    const double step = std::max(target, v.model.overhead() + decode_s - cost);  // the steps after this one
    if (!(2.0 * step <= a.slack)) continue;
    out[a.i] = 1;
    decode_s -= cost;
  }
  return out;
}

namespace {

Time ttft_deadline(const Request& r) { return r.arrival + r.slo.ttft; }

constexpr double kMinShareLeft = 0.05;  // the priority stretch is at most 20x

// The first token came late, or has not come and its deadline has passed (TTFT < SLO is met).
bool already_late(const RequestState& s, Time now) {
  const Time d = ttft_deadline(s.request);
  if (s.generated > 0) return !(s.first_token < d);
  return now >= d;
}

}  // namespace

// The pace slack to its next token (no margin) less one SLO gap: how long it can stall now.
double banked_tpot_s(const RequestState& s, Time now) {
  if (s.generated <= 0 || !std::isfinite(s.first_token) || !std::isfinite(s.request.slo.tpot)) return -kNever;
  return paced_slack(s, 0.0, now) - s.request.slo.tpot;
}

// Freshest handoff first (see slo_triage.h): on a decode instance a request past its first
// token goes by that token's time, newest first; everywhere else by arrival. Where the client
// sees that token at the decode, a handoff still before its TTFT deadline goes first, by it.
QueuePlace queue_place(const InstanceView& v, const RequestState& s, bool fresh, Time now) {
  const bool handed = fresh && v.role == Role::Decode && s.generated > 0 && std::isfinite(s.first_token);
  if (!handed) return {0, s.request.arrival};
  if (!v.first_token_at_decode) return {0, -s.first_token};
  const Time d = ttft_deadline(s.request);
  return now < d ? QueuePlace{0, d} : QueuePlace{1, -s.first_token};
}

void SloTriageScheduler::split_waiting(const InstanceView& v, Time now, const QueueAhead& q,
                                       PriorityArrivalOrder& feasible, PriorityArrivalOrder& late,
                                       std::vector<char>& stolen) {
  auto at = [&](const RequestState& x) { return queue_place(v, x, p_.fresh_handoffs, now); };
  auto push = [&](PriorityArrivalOrder& o, const RequestState& x) {
    const QueuePlace p = at(x);
    o.push(x, p.group, p.t);
  };
  stolen.clear();
  // No waiting request has a first token to predict (all resumed, or late already; a decode
  // instance's queue in P/D): each one's split is its own, and ordering the queue, which
  // fills in the order prefills end, is left to admission, which takes a few from its head.
  bool predicts = false;
  for (const RequestState& s : v.waiting) {
    const bool is_late = already_late(s, now);
    if (s.generated == 0 && !is_late) {
      predicts = true;
      break;
    }
    push(is_late ? late : feasible, s);
  }
  all_settled_ = !predicts;
  if (!predicts) {
    feasible.order_lazily();
    late.order_lazily();
    return;
  }
  feasible.clear();
  late.clear();
  std::vector<const RequestState*> waiting;
  for (const RequestState& s : v.waiting) waiting.push_back(&s);
  // An engine's queue is mostly in arrival order already (appended): check before sorting.
  auto before = [&](const RequestState* a, const RequestState* c) {
    const QueuePlace pa = at(*a), pc = at(*c);
    return std::tie(a->request.priority, pa.group, pa.t) < std::tie(c->request.priority, pc.group, pc.t);
  };
  if (!std::is_sorted(waiting.begin(), waiting.end(), before)) std::stable_sort(waiting.begin(), waiting.end(), before);
  auto kv_wait_s = [&](int64_t blocks) {
    return q.kv_rate > 0 ? double(std::max<int64_t>(0, blocks - v.kv_blocks_free)) / q.kv_rate : 0.0;
  };
  Tokens ahead = q.tokens;
  int64_t ahead_blocks = q.blocks;
  // Feasibility pass in (priority, arrival) order, with Moore-Hodgson's rule within a priority
  // level (Moore 1968: in deadline order, when the current job would be late, drop the longest
  // job taken so far): `level` holds this level's feasible waiting requests, longest (then
  // newest) on top; running requests are never demoted, nor a higher level for a lower one.
  struct Feasible {
    double cost;  // the larger of its prefill time and its blocks' time at the release rate
    Tokens tokens;
    int64_t blocks;
    size_t i;
    bool operator<(const Feasible& o) const { return std::tie(cost, i) < std::tie(o.cost, o.i); }
  };
  std::vector<char> waiting_late(waiting.size());
  // Late slack: per feasible request, the prefill and KV wait it may still add and stay in
  // time (the late test's allowance less its predicted waits).
  std::vector<double> slack_p(waiting.size(), kNever), slack_kv(waiting.size(), kNever);
  std::priority_queue<Feasible> level;
  double stretch = 1.0;  // this level's priority stretch
  for (size_t i = 0; i < waiting.size(); ++i) {
    const RequestState& s = *waiting[i];
    if (i == 0 || s.request.priority != waiting[i - 1]->request.priority) {
      level = {};
      stretch =
          p_.priority_wait ? 1.0 / std::max(kMinShareLeft, 1.0 - rates_.busy_above(s.request.priority, now)) : 1.0;
    }
    if (already_late(s, now)) {
      waiting_late[i] = 1;
      continue;
    }
    const bool resumed = s.generated > 0;  // preempted after an on-time first token: recompute only
    const int64_t need = v.blocks_needed(s, s.to_compute(), false);
    const double own_s = predicted_prefill_s(v, s.to_compute(), q.chunk, q.decode_s);
    const double cost = std::max(own_s, q.kv_rate > 0 ? double(need) / q.kv_rate : 0.0);
    bool is_late = false;
    if (!resumed && std::isfinite(s.request.slo.ttft)) {
      double wait_p = 0.0, wait_kv = 0.0;  // the last test's prefill and KV waits
      auto late_behind = [&](Tokens work, int64_t blocks) {
        wait_p = predicted_prefill_s(v, work + s.to_compute(), q.chunk, q.decode_s);
        wait_kv = kv_wait_s(blocks + need) + own_s;
        const double wait = stretch * std::max(wait_p, wait_kv);
        return now + (1.0 - p_.margin) * wait >= ttft_deadline(s.request);
      };
      is_late = late_behind(ahead, ahead_blocks);
      if (is_late && p_.count_optimal && !level.empty()) {
        const Feasible top = level.top();
        if (top.cost > cost && !late_behind(ahead - top.tokens, ahead_blocks - top.blocks)) {
          level.pop();
          waiting_late[top.i] = 1;
          ahead -= top.tokens;
          ahead_blocks -= top.blocks;
          is_late = false;
        }
      }
      if (!is_late) {  // now + (1 - margin) x stretch x wait < deadline: the wait it allows
        const double scale = (1.0 - p_.margin) * stretch;
        const double allowed = scale > 0 ? (ttft_deadline(s.request) - now) / scale : kNever;
        slack_p[i] = allowed - wait_p, slack_kv[i] = allowed - wait_kv;
      }
    }
    if (resumed && !is_late) slack_p[i] = slack_kv[i] = -kNever;  // a pace to keep: nothing goes ahead
    waiting_late[i] = is_late;
    if (!is_late) {
      ahead += s.to_compute();
      ahead_blocks += need;
      if (!resumed) level.push({cost, s.to_compute(), need, i});
    }
  }
  // Late slack: a late request goes behind its own level's feasible requests but ahead of the
  // lower levels' when every one of those has a looser TTFT SLO than its own and the work it
  // adds, with the late requests taken ahead before it, fits their least slack: e tokens add
  // at most ceil(e / chunk) + 1 full iterations of prefill wait; their blocks, their time at
  // the release rate. below_*[i]: over the feasible requests from index i on (none: nothing to pass).
  const size_t n = waiting.size();
  std::vector<double> below_p, below_kv, below_ttft;
  std::vector<char> below_any;
  if (p_.late_slack) below_p.assign(n + 1, kNever), below_kv = below_ttft = below_p, below_any.assign(n + 1, 0);
  for (size_t i = p_.late_slack ? n : 0; i-- > 0;) {
    below_p[i] = below_p[i + 1], below_kv[i] = below_kv[i + 1], below_ttft[i] = below_ttft[i + 1];
    below_any[i] = below_any[i + 1];
    if (waiting_late[i]) continue;
    below_any[i] = 1;
    below_p[i] = std::min(below_p[i], slack_p[i]), below_kv[i] = std::min(below_kv[i], slack_kv[i]);
    below_ttft[i] = std::min(below_ttft[i], waiting[i]->request.slo.ttft);
  }
  const double iteration = v.model.overhead() + q.decode_s + v.model.prefill_cost(q.chunk, 0);
  Tokens extra = 0;
  int64_t extra_blocks = 0;
  for (size_t first = 0, end = 0; first < n; first = end) {  // level by level: [first, end)
    for (end = first + 1; end < n && waiting[end]->request.priority == waiting[first]->request.priority;) ++end;
    for (size_t i = first; i < end; ++i)
      if (!waiting_late[i]) push(feasible, *waiting[i]), stolen.push_back(0);
    for (size_t i = first; i < end; ++i) {
      if (!waiting_late[i]) continue;
      const RequestState& s = *waiting[i];
      const Tokens e = extra + s.to_compute();
      const int64_t eb = extra_blocks + v.blocks_needed(s, s.to_compute(), false);
      const bool fits = p_.late_slack && below_any[end] && s.request.slo.ttft < below_ttft[end] &&
                        double((e + q.chunk - 1) / q.chunk + 1) * iteration < below_p[end] &&
                        (q.kv_rate > 0 ? double(eb) / q.kv_rate : 0.0) < below_kv[end];
      if (!fits) continue;
      waiting_late[i] = 0;  // handed out with the feasible ones
      extra = e, extra_blocks = eb;
      push(feasible, s), stolen.push_back(1);
    }
  }
  for (size_t i = 0; i < n; ++i)
    if (waiting_late[i]) push(late, *waiting[i]);
}

BatchPlan SloTriageScheduler::schedule(const InstanceView& v, Time now) {
  rates_.observe(v, now);
  // A waiting request is kept split when it has no first token to predict: its split is its
  // own and fixed (the first token came, or the deadline passed).
  auto settled = [&](const RequestState& s, KeptKey& k) {
    k.late = already_late(s, now);
    k.priority = s.request.priority;
    k.order_time = queue_place(v, s, p_.fresh_handoffs, now).t;  // group 0: kept only without first_token_at_decode
    return s.generated > 0 || k.late;
  };
  // A handoff's place changes when its TTFT deadline passes where its first token is seen at
  // the decode: no kept order there. A decode's queue (handoffs) is all settled; any other
  // queue is kept from the call after a split found it all settled (a burst's backlog past its
  // deadlines) until a request arrives with a first token to predict.
  const bool places_fixed = !(v.role == Role::Decode && v.first_token_at_decode);
  const bool keeps = places_fixed && (v.role == Role::Decode || all_settled_);
  if (!keeps) kept_.forget();
  const bool kept = keeps && kept_.follow(v, settled);
  // Refused (an arrival with a first token to predict): split until a split finds none again,
  // not a rebuild of the kept queue at every call (a full batch splits nothing).
  if (keeps && !kept && v.role != Role::Decode) all_settled_ = false;
  std::optional<BatchPlan> out;
  if (kept) out = plan(v, now, true);
  if (!out) out = plan(v, now, false);
  kept_.planned(v);
  return std::move(*out);
}

std::optional<BatchPlan> SloTriageScheduler::plan(const InstanceView& v, Time now, bool kept) {
  PlanBuilder b(v, p_.token_budget > 0 ? p_.token_budget : v.max_batch_tokens);
  const Tokens budget = b.budget_left();  // PlanBuilder caps it at the engine's max_batch_tokens
  const auto& run = v.running;
  // One decode step of the running decodes, and the prefill work of the feasible running prefills.
  QueueAhead q;
  double tpot_min = kNever;
  q.kv_rate = p_.kv_wait ? rates_.kv_release_rate(now) : 0.0;
  std::vector<char> run_late(run.size());
  for (size_t i = 0; i < run.size(); ++i) {
    const RequestState& s = run[i];
    run_late[i] = already_late(s, now);
    if (!s.in_prefill()) {
      q.decode_s += v.model.decode_cost(s.context_len());
      if (!run_late[i]) tpot_min = std::min(tpot_min, s.request.slo.tpot);
    } else if (!run_late[i]) {
      q.tokens += s.to_compute();
      q.blocks += v.blocks_needed(s, s.to_compute(), true);
    }
  }
  const std::vector<char> skip = p_.decode_pacing && std::isfinite(tpot_min)
                                     ? paced_out(v, now, run_late, tpot_min, p_.margin, q.decode_s)
                                     : std::vector<char>(run.size());
  // TPOT guard: new prefill tokens fit the tightest TPOT SLO of the on-time decodes; the
  // queue's prefill runs in chunks of at most that many tokens.
  // Strict TPOT: an iteration may run until the first on-time decode's next token is due on
  // its pace (paced-out decodes sit out two steps), never less than the per-step cap.
  double limit = (1.0 - p_.margin) * tpot_min;
  if (p_.strict_tpot && std::isfinite(tpot_min)) {
    double allowance = kNever;
    for (size_t i = 0; i < run.size(); ++i) {
      if (!has_pace(run[i], run_late[i])) continue;
      const double ahead = paced_slack(run[i], p_.margin, now);
      allowance = std::min(allowance, skip[i] ? ahead / 2.0 : ahead);
    }
    limit = std::max(limit, allowance);
  }
  const Tokens prefill_cap = p_.tpot_guard && std::isfinite(tpot_min)
                                 ? max_prefill_tokens(v, limit - v.model.overhead() - q.decode_s, budget)
                                 : budget;
  q.chunk = std::max<Tokens>(1, prefill_cap);
  // vLLM's priority scheduler (baselines/vllm_priority.cc) keyed (late, priority, arrival):
  // the running pass (feasible first, then late) with preemption from the back of `victims`
  // (late first, then the lowest priority, newest), then, only when nothing was preempted,
  // waiting requests (feasible first, then late) until the first that does not fit.
  // Strict TPOT: within each, decodes before prefills, so that a capped prefill chunk is what
  // is left of the plan's budget (vLLM gives a running prefill all the budget it fits).
  std::vector<size_t> run_order;
  for (int late = 0; late < 2; ++late)
    for (size_t i = 0; i < run.size(); ++i)
      if (bool(run_late[i]) == bool(late) && !skip[i]) run_order.push_back(i);
  if (p_.strict_tpot)
    std::stable_sort(run_order.begin(), run_order.end(), [&](size_t x, size_t y) {
      return std::make_pair(run_late[x], run[x].in_prefill()) < std::make_pair(run_late[y], run[y].in_prefill());
    });
  // Victims, taken from the back: late first, then the lowest priority, then the newest
  // arrival, or on a decode instance the most banked TPOT (slack_victims, slo_triage.h).
  const bool by_slack = p_.slack_victims && v.role == Role::Decode;
  auto victim_key = [&](size_t i) {
    return std::make_pair(run[i].request.priority, by_slack ? banked_tpot_s(run[i], now) : run[i].request.arrival);
  };
  auto victims = [&] {  // sorted only when the KV runs out
    std::vector<size_t> out(run.size());
    std::iota(out.begin(), out.end(), 0);
    std::stable_sort(out.begin(), out.end(), [&](size_t x, size_t y) {
      return std::make_pair(run_late[x], victim_key(x)) < std::make_pair(run_late[y], victim_key(y));
    });
    return out;
  };
  Tokens prefill = 0;
  const bool preempted = vllm_running_pass(
      b, run, run_order, victims,
      [&](size_t i, Tokens took) {
        if (run[i].in_prefill()) prefill += took;
      },
      [&](size_t i) {  // strict TPOT: the guard caps running prefills too
        if (!run[i].in_prefill()) return Tokens(1);
        return p_.strict_tpot ? std::min(run[i].to_compute(), prefill_cap - prefill) : run[i].to_compute();
      });
  auto room = [&] { return b.budget_left() > 0 && !b.seq_full() && prefill < prefill_cap; };
  // The waiting queue is split only when some of it can be admitted: a full batch reads none.
  if (!preempted && !v.waiting.empty() && room()) {
    // Waiting requests whose whole remaining prompt fits the free KV; late ones only while
    // they leave late_kv_room of it free (always one when nothing runs: progress).
    const int64_t late_room = int64_t(std::ceil(p_.late_kv_room * double(v.kv_blocks_total)));
    auto admit = [&](const RequestState& s, bool is_late) {  // false: admission stops
      const int64_t left = b.blocks_left() - v.blocks_needed(s, s.to_compute(), false);
      if (!run.empty() && left < (is_late ? late_room : 0)) return false;
      const Tokens took = b.add(s, false, std::min(s.to_compute(), prefill_cap - prefill), true);
      prefill += took;
      return took > 0;
    };
    if (kept) {
      for (auto it = kept_.order().begin(); it != kept_.order().end() && room(); ++it) {
        const RequestState* s = kept_.find(v, *it);
        if (!s) return std::nullopt;
        if (!admit(*s, it->late)) break;
      }
    } else {
      PriorityArrivalOrder feasible, late;
      std::vector<char> stolen;  // per feasible request handed out, in order: a late one with slack
      split_waiting(v, now, q, feasible, late, stolen);
      for (size_t k = 0; (!feasible.empty() || !late.empty()) && room(); ++k) {
        const bool is_late = feasible.empty();
        const bool with_slack = !is_late && k < stolen.size() && stolen[k];
        // a late request with slack that does not fit the KV room is passed over
        if (!admit(*(is_late ? late.next() : feasible.next()), is_late || with_slack) && !with_slack) break;
      }
    }
  }
  ensure_progress(b);
  return b.take();
}

}  // namespace slocore::stack
