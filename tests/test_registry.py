"""Policies by name: unknown names/params are ValueErrors listing what is valid; baseline
push policies place requests as documented."""

import pytest

import slocore as s
from slocore import _core


def views(n, busy=()):
    out = []
    for i in range(n):
        v = s.InstanceView(i)
        v.running = [s.RequestState(s.Request(100 + i * 10 + j, 0.0, 8)) for j in range(busy[i] if busy else 0)]
        out.append(v)
    return out


def test_unknown_names_and_params():
    with pytest.raises(ValueError, match="known: .*round_robin"):
        _core.make_global_policy("nope")
    with pytest.raises(ValueError, match="random.sed: unknown parameter"):
        _core.make_global_policy("random", {"sed": 1})
    with pytest.raises(ValueError, match="must be a number"):
        _core.make_global_policy("random", {"seed": "x"})


def test_round_robin_skips_non_accepting():
    p = _core.make_global_policy("round_robin")
    vs = views(3)
    vs[1].accepting = False
    for i in range(4):
        p.submit(s.Request(i, 0.0, 8), 0.0)
    assert [a.instance for a in p.poll(0.0, vs)] == [0, 2, 0, 2]
    assert p.pending() == 0


def test_least_outstanding_counts_this_polls_placements():
    p = _core.make_global_policy("least_outstanding")
    for i in range(3):
        p.submit(s.Request(i, 0.0, 8), 0.0)
    assert [a.instance for a in p.poll(0.0, views(2, busy=(2, 0)))] == [1, 1, 0]


def test_no_accepting_instance_keeps_requests_queued():
    p = _core.make_global_policy("least_tokens")
    p.submit(s.Request(0, 0.0, 8), 0.0)
    vs = views(2)
    for v in vs:
        v.accepting = False
    assert p.poll(0.0, vs) == [] and p.pending() == 1
    vs[0].accepting = True
    assert [a.instance for a in p.poll(1.0, vs)] == [0]


def test_random_is_seeded():
    def run(seed):
        p = _core.make_global_policy("random", {"seed": seed})
        for i in range(20):
            p.submit(s.Request(i, 0.0, 8), 0.0)
        return [a.instance for a in p.poll(0.0, views(4))]

    assert run(1) == run(1) and run(1) != run(2)
