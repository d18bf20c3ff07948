"""A Python global policy that records every call it receives (the event contract of
``csrc/slocore/policy/global_policy.h``) and forwards it to an inner registered policy: the
Python twin of the registered ``recording`` policy. It runs in ``simulate()`` and behind
``slocore serve`` (``policy: {name: "slocore.recording:RecordingPolicy", params: {policy:
hfx}}``); ``events()`` lists ``(kind, request, instance, generated, now, expected_handoff)``.
"""

from __future__ import annotations

import math

from slocore._core import GlobalPolicy, make_global_policy


class RecordingPolicy(GlobalPolicy):
    def __init__(self, policy: str = "least_outstanding", **params):
        super().__init__()
        self.inner = make_global_policy(policy, params)
        self.log: list[tuple] = []

    def events(self) -> list[tuple]:
        return list(self.log)

    def _rec(self, kind, request=-1, instance=-1, generated=0, now=0.0, expected_handoff=math.nan):
        self.log.append((kind, int(request), int(instance), int(generated), float(now), float(expected_handoff)))

    def name(self):
        return "py_recording"

    def params(self):
        return {**self.inner.params(), "policy": self.inner.name()}

    def submit(self, request, now, expected_handoff=math.nan):
        self._rec("submit", request.id, now=now, expected_handoff=expected_handoff)
        self.inner.submit(request, now, expected_handoff)

    def poll(self, now, views):
        out = self.inner.poll(now, views)
        for a in out:
            self._rec("assign", a.request, a.instance, now=now)
        return out

    def next_wakeup(self):
        return self.inner.next_wakeup()

    def early_assignment(self):
        return self.inner.early_assignment()

    def pending(self):
        return self.inner.pending()

    def on_cancelled(self, request, now):
        self._rec("cancelled", request, now=now)
        self.inner.on_cancelled(request, now)

    def on_prefill_done(self, request, instance, now):
        self._rec("prefill_done", request, instance, now=now)
        self.inner.on_prefill_done(request, instance, now)

    def on_token(self, request, instance, generated, now):
        self._rec("token", request, instance, generated, now)
        self.inner.on_token(request, instance, generated, now)

    def on_finished(self, request, instance, now):
        self._rec("finished", request, instance, now=now)
        self.inner.on_finished(request, instance, now)

    def on_instance_added(self, instance, role, now):
        self._rec("instance_added", instance=instance, now=now)
        self.inner.on_instance_added(instance, role, now)

    def on_instance_removed(self, instance, now):
        self._rec("instance_removed", instance=instance, now=now)
        self.inner.on_instance_removed(instance, now)
