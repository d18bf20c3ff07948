"""Reference for csrc/slocore/stack/slo_triage.h: vLLM's priority scheduler keyed (late,
priority, arrival). Late: past the first-token deadline (ProServe Eq. 3), or predicted past it
with `margin` taken off the predicted wait; preemption takes late ones first; new prefill
tokens are capped to (1 - margin) of the on-time decodes' TPOT (`tpot_guard`); within a
priority level a request predicted late demotes the level's longest feasible waiting request
when that is longer and makes it feasible (Moore-Hodgson, `count_optimal`); with `kv_wait` a
waiting request also waits for the KV blocks ahead of it at the measured release rate
and, with `priority_wait`, stretches by 1 / (1 - the higher levels' share of the time)
(`InstanceRates`, csrc/slocore/stack/instance_rates.h); a preempted request with an on-time first
token is neither predicted nor demoted; a waiting request is admitted only when its whole
prompt fits the free KV, a late one only when it leaves `late_kv_room` of it free; with
`late_slack` a late request goes after its own level's feasible requests and ahead of the lower
levels' when all of those have a looser TTFT SLO and slack for its work (passed over, not
stopping admission, when it does not fit the KV room). On a decode instance the queue goes by
first-token time, newest first, instead of arrival (freshest handoff first; where the client
sees the first token at the decode, those before their TTFT deadline first, by it), and
preempts the decode with the most banked TPOT instead of the newest arrival (`slack_victims`)."""

from __future__ import annotations

import heapq
import math

from slocore.reference.batch_baselines import PlanBuilder, blocks_for, blocks_needed, ensure_progress, in_prefill
from slocore.reference.vllm_priority import running_pass


def predicted_prefill_s(v, tokens: int, budget: int, decode_s: float) -> float:
    if tokens <= 0:
        return 0.0
    if budget <= 0:
        return math.inf
    full, rest = divmod(tokens, budget)
    t = (full + (1 if rest > 0 else 0)) * (v.model.overhead() + decode_s)
    if full > 0:
        t += full * v.model.prefill_cost(budget, 0)
    if rest > 0:
        t += v.model.prefill_cost(rest, 0)
    return t


def max_prefill_tokens(v, limit_s: float, budget: int) -> int:
    if not (limit_s >= v.model.prefill_cost(1, 0)):
        return 0
    lo, hi = 1, budget
    if v.model.prefill_cost(hi, 0) <= limit_s:
        return hi
    while hi - lo > 1:
        mid = lo + (hi - lo) // 2
        if v.model.prefill_cost(mid, 0) <= limit_s:
            lo = mid
        else:
            hi = mid
    return lo


MIN_SHARE_LEFT = 0.05  # the priority stretch is at most 20x
KEEP_AT_LEAST = 4096  # requests InstanceRates remembers before it forgets unreported ones


def _deadline(r) -> float:
    return r.arrival + r.slo.ttft


def already_late(s, now: float) -> bool:
    if s.generated > 0:
        return not (s.first_token < _deadline(s.request))
    return now >= _deadline(s.request)


def banked_tpot_s(s, now: float) -> float:
    """A running decode's banked TPOT, (generated - 1) x its TPOT SLO less the time since its
    first token: the pace slack to its next token (no margin) less one SLO gap; -inf without a
    first token or a TPOT SLO (`slack_victims`)."""
    if s.generated <= 0 or not math.isfinite(s.first_token) or not math.isfinite(s.request.slo.tpot):
        return -math.inf
    return paced_slack(s, 0.0, now) - s.request.slo.tpot


def queue_place(v, s, now: float, fresh: bool = True) -> tuple[int, float]:
    """(group, time) within a priority level. Freshest handoff first (`fresh_handoffs`): on a
    decode instance a request past its first token goes by minus that token's time (newest
    first); everywhere else by arrival. Where the client sees that token at the decode
    (`v.first_token_at_decode`), a handoff before its TTFT deadline goes first, by it."""
    handed = fresh and v.role.name == "DECODE" and s.generated > 0 and math.isfinite(s.first_token)
    if not handed:
        return 0, s.request.arrival
    if not v.first_token_at_decode:
        return 0, -s.first_token
    d = _deadline(s.request)
    return (0, d) if now < d else (1, -s.first_token)


class InstanceRates:
    """csrc/slocore/stack/instance_rates.h: the net KV blocks/s the instance frees (finished
    requests' blocks minus the decodes' new ones) and, per priority level, the prefill seconds
    arriving per second; decayed with time constant `window_s`, over the window seen so far."""

    def __init__(self, window_s: float):
        self.window_s, self.known, self.work = window_s, {}, {}
        self.freed, self.taken, self.t, self.t0 = 0.0, 0.0, -1.0, -1.0

    def _decay(self, now: float) -> None:
        if self.t0 < 0:
            self.t = self.t0 = now
        elif now > self.t:
            f = math.exp(-(now - self.t) / self.window_s)
            self.freed, self.taken, self.t = self.freed * f, self.taken * f, now
            self.work = {level: w * f for level, w in self.work.items()}

    def _seen(self, now: float) -> float:
        return self.window_s * (1.0 - math.exp(-(now - self.t0) / self.window_s))

    def observe(self, v, now: float) -> None:
        self._decay(now)
        for s in v.waiting:
            if s.request.id not in self.known:
                self.known[s.request.id] = 0
                p = s.request.priority
                self.work[p] = self.work.get(p, 0.0) + v.model.prefill_cost(s.to_compute, 0)
        for s in v.running:
            self.known[s.request.id] = blocks_for(v, s.computed)
            if not in_prefill(s):
                self.taken += blocks_needed(v, s, 1, True)
        if len(self.known) > 8 * (len(v.running) + len(v.waiting)) + KEEP_AT_LEAST:  # unreported finishes
            self.known = {s.request.id: self.known[s.request.id] for s in list(v.running) + list(v.waiting)}

    def finished(self, rid: int, now: float) -> None:
        if rid in self.known:
            self._decay(now)
            self.freed += self.known.pop(rid)

    def kv_release_rate(self, now: float) -> float:
        self._decay(now)
        seen = self._seen(now)
        return max(0.0, self.freed - self.taken) / seen if seen > 1e-9 else 0.0

    def busy_above(self, priority: int, now: float) -> float:
        self._decay(now)
        seen = self._seen(now)
        if not seen > 1e-9:
            return 0.0
        work = 0.0
        for level in sorted(self.work):
            if level >= priority:
                break
            work += self.work[level]
        return work / seen


def running_load(v, now: float):
    """Per running request whether it is late; one decode step of the running decodes; the
    feasible running prefill tokens and the KV blocks they have yet to take; the tightest TPOT
    SLO of the on-time decodes."""
    decode_s, ahead, ahead_blocks, tpot_min = 0.0, 0, 0, math.inf
    run_late = [already_late(s, now) for s in v.running]
    for s, late in zip(v.running, run_late):
        if not in_prefill(s):
            decode_s += v.model.decode_cost(s.computed)
            if not late:
                tpot_min = min(tpot_min, s.request.slo.tpot)
        elif not late:
            ahead += s.to_compute
            ahead_blocks += blocks_needed(v, s, s.to_compute, True)
    return run_late, decode_s, ahead, ahead_blocks, tpot_min


def has_pace(s, late: bool) -> bool:
    """Whether a running request has a pace to keep: an on-time decode with a TPOT SLO."""
    return not in_prefill(s) and not late and math.isfinite(s.request.slo.tpot) and math.isfinite(s.first_token)


def paced_slack(s, margin: float, now: float) -> float:
    """How far ahead of its pace an on-time decode is: its next token's due time at (1 -
    margin) x its TPOT SLO per token since its first, less now."""
    return s.first_token + s.generated * (1.0 - margin) * s.request.slo.tpot - now


def paced_out(v, now: float, run_late, tpot_min: float, margin: float, decode_s: float):
    """Decode pacing (SLICE's per-request decode rates): per running request whether it sits
    this step out, and one decode step of the rest."""
    run = v.running
    out = [False] * len(run)
    target = (1.0 - margin) * tpot_min
    if not v.model.overhead() + decode_s > target:
        return out, decode_s
    ahead = [
        (paced_slack(s, margin, now), i)
        for i, s in enumerate(run)
        if has_pace(s, run_late[i]) and s.request.slo.tpot > tpot_min
    ]
    for slack, i in sorted(ahead, key=lambda a: -a[0]):  # most ahead first; stable: ties by index
        if not v.model.overhead() + decode_s > target:
            break
        cost = v.model.decode_cost(run[i].computed)
        if 2.0 * max(target, v.model.overhead() + decode_s - cost) <= slack:
            out[i], decode_s = True, decode_s - cost
    return out, decode_s


def split_waiting(
    v,
    now,
    chunk,
    decode_s,
    ahead,
    ahead_blocks,
    kv_rate,
    stretch_of,
    margin,
    count_optimal,
    late_slack=True,
    fresh_handoffs=True,
):
    """The waiting requests split into (feasible, late, stolen): feasible and late each in
    (priority, queue_place) order, with Moore-Hodgson's demotion within a priority level when
    `count_optimal`; with `late_slack`, a late request whose work fits the lower levels'
    slack (all of them with a looser TTFT SLO) is handed out after its level's feasible ones
    (`stolen`: per feasible request, whether it is one of those)."""

    def kv_wait_s(blocks):
        return max(0, blocks - v.kv_blocks_free) / kv_rate if kv_rate > 0 else 0.0

    waiting = sorted(v.waiting, key=lambda s: (s.request.priority, *queue_place(v, s, now, fresh_handoffs)))
    waiting_late = [False] * len(waiting)
    slack_p, slack_kv = [math.inf] * len(waiting), [math.inf] * len(waiting)
    level = []  # this level's feasible waiting requests: (-cost, -index, tokens, blocks), costliest then newest first
    stretch = 1.0  # this level's priority stretch
    for i, s in enumerate(waiting):
        if i == 0 or s.request.priority != waiting[i - 1].request.priority:
            level, stretch = [], stretch_of(s.request.priority)
        if already_late(s, now):
            waiting_late[i] = True
            continue
        resumed = s.generated > 0  # preempted after an on-time first token: recompute only
        need = blocks_needed(v, s, s.to_compute, False)
        own_s = predicted_prefill_s(v, s.to_compute, chunk, decode_s)
        cost = max(own_s, need / kv_rate if kv_rate > 0 else 0.0)
        late = False
        if not resumed and math.isfinite(s.request.slo.ttft):

            def late_behind(work, blocks, s=s, need=need, own_s=own_s, stretch=stretch):
                wait = stretch * max(
                    predicted_prefill_s(v, work + s.to_compute, chunk, decode_s), kv_wait_s(blocks + need) + own_s
                )
                return now + (1.0 - margin) * wait >= _deadline(s.request)

            late = late_behind(ahead, ahead_blocks)
            if late and count_optimal and level:
                top_cost, j, tokens, blocks = -level[0][0], -level[0][1], level[0][2], level[0][3]
                if top_cost > cost and not late_behind(ahead - tokens, ahead_blocks - blocks):
                    heapq.heappop(level)
                    waiting_late[j] = True
                    ahead, ahead_blocks, late = ahead - tokens, ahead_blocks - blocks, False
            if not late:  # the wait it allows, less its predicted waits
                scale = (1.0 - margin) * stretch
                allowed = (_deadline(s.request) - now) / scale if scale > 0 else math.inf
                slack_p[i] = allowed - predicted_prefill_s(v, ahead + s.to_compute, chunk, decode_s)
                slack_kv[i] = allowed - (kv_wait_s(ahead_blocks + need) + own_s)
        if resumed and not late:  # a pace to keep: nothing goes ahead of it
            slack_p[i] = slack_kv[i] = -math.inf
        waiting_late[i] = late
        if not late:
            ahead, ahead_blocks = ahead + s.to_compute, ahead_blocks + need
            if not resumed:
                heapq.heappush(level, (-cost, -i, s.to_compute, need))
    n = len(waiting)
    below_p, below_kv, below_ttft = [math.inf] * (n + 1), [math.inf] * (n + 1), [math.inf] * (n + 1)
    below_any = [False] * (n + 1)
    for i in range(n - 1, -1, -1):  # over the feasible requests from index i on (none: nothing to pass)
        below_p[i], below_kv[i], below_ttft[i] = below_p[i + 1], below_kv[i + 1], below_ttft[i + 1]
        below_any[i] = below_any[i + 1] or not waiting_late[i]
        if not waiting_late[i]:
            below_p[i], below_kv[i] = min(below_p[i], slack_p[i]), min(below_kv[i], slack_kv[i])
            below_ttft[i] = min(below_ttft[i], waiting[i].request.slo.ttft)
    iteration = v.model.overhead() + decode_s + v.model.prefill_cost(chunk, 0)
    extra, extra_blocks = 0, 0
    feasible, stolen = [], []
    first = 0
    while first < n:  # level by level: [first, end)
        end = first + 1
        while end < n and waiting[end].request.priority == waiting[first].request.priority:
            end += 1
        level_states = range(first, end)
        for i in level_states:
            if not waiting_late[i]:
                feasible.append(waiting[i])
                stolen.append(False)
        for i in level_states:
            if not waiting_late[i]:
                continue
            s = waiting[i]
            e = extra + s.to_compute
            eb = extra_blocks + blocks_needed(v, s, s.to_compute, False)
            if (
                late_slack
                and below_any[end]
                and s.request.slo.ttft < below_ttft[end]
                and ((e + chunk - 1) // chunk + 1) * iteration < below_p[end]
                and (eb / kv_rate if kv_rate > 0 else 0.0) < below_kv[end]
            ):
                waiting_late[i] = False
                extra, extra_blocks = e, eb
                feasible.append(s)
                stolen.append(True)
        first = end
    return feasible, [s for s, late in zip(waiting, waiting_late) if late], stolen


class SloTriage:
    """The scheduler with its one piece of state, the KV release rate (`on_finished` feeds it)."""

    def __init__(
        self,
        token_budget: int = 0,
        margin: float = 0.2,
        tpot_guard: bool = True,
        count_optimal: bool = True,
        kv_wait: bool = True,
        priority_wait: bool = True,
        rate_window_s: float = 10.0,
        late_kv_room: float = 0.3,
        decode_pacing: bool = True,
        strict_tpot: bool = False,
        late_slack: bool = True,
        fresh_handoffs: bool = True,
        slack_victims: bool = True,
    ):
        self.token_budget, self.margin, self.tpot_guard = token_budget, margin, tpot_guard
        self.count_optimal = count_optimal
        self.kv_wait, self.priority_wait, self.late_kv_room = kv_wait, priority_wait, late_kv_room
        self.decode_pacing, self.strict_tpot, self.late_slack = decode_pacing, strict_tpot, late_slack
        self.fresh_handoffs, self.slack_victims = fresh_handoffs, slack_victims
        self.rates = InstanceRates(rate_window_s)

    def on_finished(self, rid: int, now: float) -> None:
        self.rates.finished(rid, now)

    def _stretch(self, priority: int, now: float) -> float:
        if not self.priority_wait:
            return 1.0
        return 1.0 / max(MIN_SHARE_LEFT, 1.0 - self.rates.busy_above(priority, now))

    def split(self, v, now: float, kv_rate: float):
        """(feasible waiting, late waiting, per feasible one whether it is a late one with slack,
        per running request late, per running request paced out, prefill cap)."""
        budget = min(self.token_budget if self.token_budget > 0 else v.max_batch_tokens, v.max_batch_tokens)
        run_late, decode_s, ahead, ahead_blocks, tpot_min = running_load(v, now)
        skip = [False] * len(v.running)
        if self.decode_pacing and math.isfinite(tpot_min):
            skip, decode_s = paced_out(v, now, run_late, tpot_min, self.margin, decode_s)
        cap = budget
        if self.tpot_guard and math.isfinite(tpot_min):
            limit = (1.0 - self.margin) * tpot_min
            if self.strict_tpot:  # up to the first on-time decode's paced next token (paced-out: two steps)
                ahead_s = [
                    paced_slack(s, self.margin, now) / (2.0 if out else 1.0)
                    for s, late, out in zip(v.running, run_late, skip)
                    if has_pace(s, late)
                ]
                limit = max(limit, min(ahead_s, default=math.inf))
            cap = max_prefill_tokens(v, limit - v.model.overhead() - decode_s, budget)
        feasible, late, stolen = split_waiting(
            v,
            now,
            max(1, cap),
            decode_s,
            ahead,
            ahead_blocks,
            kv_rate,
            lambda priority: self._stretch(priority, now),
            self.margin,
            self.count_optimal,
            self.late_slack,
            self.fresh_handoffs,
        )
        return feasible, late, stolen, run_late, skip, cap

    def schedule(self, v, now: float):
        b = PlanBuilder(v, self.token_budget if self.token_budget > 0 else v.max_batch_tokens)
        run = v.running
        self.rates.observe(v, now)
        kv_rate = self.rates.kv_release_rate(now) if self.kv_wait else 0.0
        feasible_waiting, late_waiting, stolen, run_late, skip, cap = self.split(v, now, kv_rate)
        # vLLM priority keyed (late, priority, arrival): running pass, then waiting if nothing was preempted.
        run_order = [i for late in (False, True) for i in range(len(run)) if run_late[i] == late and not skip[i]]
        if self.strict_tpot:  # within each, decodes before prefills
            run_order.sort(key=lambda i: (run_late[i], in_prefill(run[i])))
        by_slack = self.slack_victims and v.role.name == "DECODE"

        def victim_key(i):  # taken from the back: late, lowest priority, newest (decode: most banked TPOT)
            return (
                run_late[i],
                run[i].request.priority,
                banked_tpot_s(run[i], now) if by_slack else run[i].request.arrival,
            )

        victims = sorted(range(len(run)), key=victim_key)
        prefill = 0

        def on_turn(i, took):
            nonlocal prefill
            if in_prefill(run[i]):
                prefill += took

        def want(i):  # strict TPOT: the guard caps running prefills too
            if not in_prefill(run[i]):
                return 1
            return min(run[i].to_compute, cap - prefill) if self.strict_tpot else run[i].to_compute

        preempted = running_pass(b, run, run_order, victims, on_turn, want)
        if not preempted:
            late_room = math.ceil(self.late_kv_room * v.kv_blocks_total)
            for k, s in enumerate(feasible_waiting + late_waiting):
                if b.budget <= 0 or b.seq_full() or prefill >= cap:
                    break
                with_slack = k < len(stolen) and stolen[k]  # a late one with slack: passed over when it misfits
                left = b.blocks - blocks_needed(v, s, s.to_compute, False)
                if run and left < (0 if k < len(feasible_waiting) and not with_slack else late_room):
                    if with_slack:
                        continue
                    break
                took = b.add(s, False, min(s.to_compute, cap - prefill), True)
                if took == 0:
                    if with_slack:
                        continue
                    break
                prefill += took
        ensure_progress(b)
        return b.items, b.preempted


def slo_triage(v, now: float, *args, **params):
    """One decision of a fresh scheduler (no KV release rate measured yet)."""
    return SloTriage(*args, **params).schedule(v, now)
