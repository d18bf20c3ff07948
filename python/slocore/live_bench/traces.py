"""The traces of ``slocore bench live``, and the token-id prompts that carry their prefix identity.

- ``two_class``: interactive (prompt 64-192, output 32-96, TTFT 300 ms / TPOT 30 ms) and
  batch (prompt 512-896, output 128-256, TTFT 5 s / TPOT 200 ms), uniform lengths, one
  Poisson stream, each request interactive with probability 1/2.
- ``multi_turn``: chat sessions (Poisson session starts, 3-6 turns, the two classes above
  by session) behind one shared system prompt per class; turn k's prompt is the system
  prompt, the whole history (earlier messages and replies) and the new message, so it
  shares the previous turn's prompt as a prefix. Every prompt fits 1,024 tokens (the tiny
  test model's context). The next turn arrives after the reply (open loop: output x 10 ms)
  plus an exponential think time (mean 2 s): our assumption, no public trace gives it.
- ``prefix_chat``: ``multi_turn`` with a few long shared system prompts: two per class (four
  in all, 384 tokens each), each session drawing one of its class's two. The cache test's
  trace: histories grow within a session, system prompts are shared across sessions.

Rates are set afterwards (``at_rate``): a trace is built at 1 req/s and its arrivals rescaled.
"""

from __future__ import annotations

import numpy as np

from slocore.sim import workloads as W

# class -> (prompt lo, hi, output lo, hi, TTFT s, TPOT s)
CLASSES = {
    "interactive": (64, 192, 32, 96, 0.3, 0.03),
    "batch": (512, 896, 128, 256, 5.0, 0.2),
}
TRACES = ("two_class", "multi_turn", "prefix_chat")
SYSTEM_PROMPT_TOKENS = 256
MAX_CONTEXT = 1000  # prompt + output, under the tiny model's 1,024
REPLY_S_PER_TOKEN = 0.01
THINK_S = 2.0


def _uniform(rng, lo, hi, n):
    return rng.integers(lo, hi + 1, n)


def two_class(n: int, seed: int = 0) -> W.Workload:
    rng = np.random.default_rng(seed)
    arrival = np.cumsum(rng.exponential(1.0, n))
    cls = (rng.random(n) >= 0.5).astype(np.int64)  # 0 interactive, 1 batch
    cols = {k: np.zeros(n) for k in ("prompt_len", "output_len", "ttft", "tpot")}
    for k, (plo, phi, olo, ohi, ttft, tpot) in enumerate(CLASSES.values()):
        m = cls == k
        cols["prompt_len"][m] = _uniform(rng, plo, phi, int(m.sum()))
        cols["output_len"][m] = _uniform(rng, olo, ohi, int(m.sum()))
        cols["ttft"][m], cols["tpot"][m] = ttft, tpot
    return W.Workload(
        arrival=arrival,
        prompt_len=cols["prompt_len"].astype(np.int64),
        output_len=cols["output_len"].astype(np.int64),
        ttft=cols["ttft"],
        tpot=cols["tpot"],
        deadline=np.full(n, np.nan),
        priority=cls.astype(float),
        priority_weight=np.ones(n),
        utility=np.ones(n),
        task=cls,
        task_names=tuple(CLASSES),
        name="two_class",
        seed=seed,
        params={"n": n},
    )


def multi_turn(
    n: int, seed: int = 0, system_prompts: int = 1, system_tokens: int = SYSTEM_PROMPT_TOKENS, name: str = "multi_turn"
) -> W.Workload:
    """About `n` requests (whole sessions: the first session that reaches n ends the trace);
    `system_prompts` shared system prompts of `system_tokens` tokens per class."""
    rng = np.random.default_rng(seed)
    rows: list[tuple] = []
    t, s_i = 0.0, 0
    while len(rows) < n:
        t += rng.exponential(4.5)  # ~4.5 turns per session: ~1 req/s before rescaling
        k = int(rng.random() >= 0.5)
        plo, phi, olo, ohi, ttft, tpot = CLASSES[tuple(CLASSES)[k]]
        sys_i = k if system_prompts == 1 else 1000 + k * system_prompts + int(rng.integers(system_prompts))
        sys_g, sess_g = W.group_id("agent_system", seed, sys_i), W.group_id("chat", seed, s_i)
        history, at = system_tokens, t
        for _ in range(int(rng.integers(3, 7))):
            user = int(rng.integers(16, 65))
            out = int(_uniform(rng, olo, ohi, 1)[0]) if k == 0 else int(rng.integers(64, 129))
            p = history + user
            if p + out > MAX_CONTEXT:
                break
            segs = ((sys_g, system_tokens), (sess_g, p - system_tokens))
            rows.append((at, p, out, ttft, tpot, k, segs))
            history = p + out
            at += out * REPLY_S_PER_TOKEN + rng.exponential(THINK_S)
        s_i += 1
    rows.sort(key=lambda r: r[0])
    rows = rows[:n]
    a = np.array([r[:6] for r in rows], dtype=float)
    m = len(rows)
    return W.Workload(
        arrival=a[:, 0],
        prompt_len=a[:, 1].astype(np.int64),
        output_len=a[:, 2].astype(np.int64),
        ttft=a[:, 3],
        tpot=a[:, 4],
        deadline=np.full(m, np.nan),
        priority=a[:, 5],
        priority_weight=np.ones(m),
        utility=np.ones(m),
        task=a[:, 5].astype(np.int64),
        task_names=tuple(CLASSES),
        name=name,
        seed=seed,
        params={"n": n},
        prefix=[r[6] for r in rows],
    )


def make(name: str, n: int, seed: int = 0) -> W.Workload:
    if name not in TRACES:
        raise ValueError(f"trace: unknown {name!r} (known: {', '.join(TRACES)})")
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"requests: must be an integer >= 1, got {n!r}")
    if name == "two_class":
        return two_class(n, seed)
    if name == "prefix_chat":
        return multi_turn(n, seed, system_prompts=2, system_tokens=384, name="prefix_chat")
    return multi_turn(n, seed)


def at_rate(w: W.Workload, rate: float) -> W.Workload:
    """`w` with its arrivals rescaled to a mean of `rate` requests/s, the first at 0."""
    if not rate > 0:
        raise ValueError(f"rate: must be > 0, got {rate}")
    w = w._with(arrival=w.arrival - w.arrival[0])
    cur = (len(w) - 1) / w.duration if w.duration > 0 else rate
    return w.rate_scaled(rate / cur)


def _group_tokens(group: int, salt: int, length: int, vocab: int) -> list[int]:
    rng = np.random.default_rng([int(group) & 0xFFFFFFFF, int(group) >> 32, int(salt)])
    return rng.integers(1, vocab, length).tolist()


def prompts(w: W.Workload, salt: int, vocab: int = 1000) -> list[list[int]]:
    """Token-id prompts: each prefix segment (group, len) is the first `len` tokens of the
    group's own text, the rest is fresh; `salt` changes every text, so two runs never share
    cached blocks while each run keeps the trace's sharing."""
    rng = np.random.default_rng([int(salt), 0x5EED])
    out, pre = [], w.prefixes()
    for i in range(len(w)):
        toks: list[int] = []
        for g, ln in pre[i] or ():
            toks += _group_tokens(g, salt, int(ln), vocab)
        rest = int(w.prompt_len[i]) - len(toks)
        out.append(toks + rng.integers(1, vocab, rest).tolist())
    return out
