"""A scaler that records every event it gets and never scales (tests of the scaler's event
contract, csrc/slocore/scale/scaler.h); named by import path in a serve config."""

import slocore


class RecordingScaler(slocore.Scaler):
    def __init__(self, interval: float = 0.2):
        super().__init__()
        self._interval = float(interval)
        self.log: list = []
        self.decides = 0

    def name(self):
        return "recording"

    def interval(self):
        return self._interval

    def on_arrival(self, request, now):
        self.log.append(("arrival", request.id, now))

    def on_first_token(self, request, now):
        self.log.append(("first_token", request, now))

    def on_finished(self, request, now):
        self.log.append(("finished", request, now))

    def decide(self, now, views):
        self.decides += 1
        return []

    def per_request(self):
        """{rank by arrival: [kinds]}, and a check that times never go back."""
        rank, out, last = {}, {}, -1.0
        for kind, rid, now in self.log:
            assert now >= last - 1e-9, self.log
            last = now
            rank.setdefault(rid, len(rank))
            out.setdefault(rank[rid], []).append(kind)
        return out
