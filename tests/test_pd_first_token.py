"""simulate(pd_first_token=...): where the metrics date a handed-off request's first token.
"prefill" (the default) at the prefill's end; "decode" with token 2, at the decode instance's
first step, where a client behind vLLM's P/D proxy protocol first sees it. The dating changes,
and the decode instances' views say so (`first_token_at_decode`, which slo_triage's decode
order reads); under a scheduler that does not read it the run itself (every event the policies
see, every later token) is the same."""

import pytest

import slocore
from slocore.sim.runner import simulate


def requests():
    # output 1: done at the prefill instance; the others hand off to decode
    return [
        slocore.Request(i, 0.02 * i, 200 + 40 * i, output_len=1 if i == 3 else 5, ttft=0.5, tpot=0.05)
        for i in range(12)
    ]


def run(mode, first_token, scheduler="sarathi_fcfs"):
    kw = dict(prefill_instances=1, decode_instances=1) if mode == "pd" else dict(instances=2)
    res = simulate(requests(), mode=mode, batch_scheduler=scheduler, pd_first_token=first_token, seed=0, **kw)
    return res, {r.request.id: list(r.token_times) for r in res.recorder.records()}


def test_decode_dates_a_handoffs_first_token_with_its_second():
    at_prefill, tp = run("pd", "prefill")
    at_decode, td = run("pd", "decode")
    assert at_prefill.stats["iterations"] == at_decode.stats["iterations"]  # the same run
    for i, times in tp.items():
        assert td[i][1:] == times[1:], i  # every token after the first is where it was
        if i == 3:  # one-token output: its only token comes from the prefill, in both
            assert td[i] == times and len(times) == 1
            continue
        assert len(times) == 5 and td[i][0] == td[i][1] == times[1] > times[0], (i, times, td[i])
    # the dated first token moves the TTFT (by the KV transfer and the first decode step), not the rest
    ttft = lambda t: {i: v[0] for i, v in t.items()}  # noqa: E731
    assert all(ttft(td)[i] >= ttft(tp)[i] for i in tp)
    assert at_decode.summary["ttft"]["mean"] > at_prefill.summary["ttft"]["mean"]


def test_colocated_runs_are_the_same_either_way():
    assert run("colocated", "prefill", "slo_triage")[1] == run("colocated", "decode", "slo_triage")[1]


class SeenAt(slocore.BatchScheduler):
    """sarathi_fcfs's plans, noting per role what each view says of the first token."""

    def __init__(self, seen):
        super().__init__()
        self.inner, self.seen = slocore.make_batch_scheduler("sarathi_fcfs", {}), seen

    def name(self):
        return "seen_at"

    def schedule(self, v, now):
        self.seen.add((v.role.name, v.first_token_at_decode))
        return self.inner.schedule(v, now)


@pytest.mark.parametrize("first_token", ["prefill", "decode"])
def test_decode_views_say_where_the_first_token_is_seen(first_token):
    seen = set()
    run("pd", first_token, lambda: SeenAt(seen))
    assert seen == {("PREFILL", first_token == "decode"), ("DECODE", first_token == "decode")}
    seen.clear()
    run("colocated", first_token, lambda: SeenAt(seen))
    assert seen == {("COLOCATED", False)}


def test_unknown_value_is_refused():
    with pytest.raises(ValueError, match="pd_first_token"):
        simulate(requests(), mode="pd", pd_first_token="client")
