"""An engine's latency model refitted to the steps it times (csrc/slocore/core/online_fit.h),
for engines that are not the simulator's: the vLLM scheduler plugin times each step from the
end of ``schedule()`` to ``update_from_output()`` and feeds it here, as the simulator's
engine feeds its iterations with ``online_fit`` (the ``slocore`` preset)."""

from __future__ import annotations

import time

import slocore as _s

WINDOW = 32  # steps between refits: the simulator's correction_window
MAX_OPEN = 64  # steps begun and not ended (an engine that overlaps steps); older ones dropped
COEFFS = ("t_c", "a_p", "b_p", "c_p", "a_d", "b_d")
_ON, _OFF = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def online_fit_setting(value) -> bool:
    """A config or environment value for ``online_fit``: a bool, or 1/0, true/false, yes/no,
    on/off in any case; anything else is a ValueError naming the field."""
    if isinstance(value, bool):
        return value
    v = str(value).strip().lower()
    if v in _ON or v in _OFF:
        return v in _ON
    raise ValueError(f"online_fit: expected true or false (1/0, yes/no, on/off), got {value!r}")


def effective_coeffs(model) -> dict:
    """The model's coefficients with its correction factor folded in, by name."""
    c, beta = model.coeffs, model.correction
    return {k: getattr(c, k) * beta for k in COEFFS}


class StepFit:
    """``begin(key, items)`` when a step is planned, ``end(key)`` when it has run; every
    WINDOW steps the model's coefficients become the fit's (``model.set_coeffs``)."""

    def __init__(self, model, window: int = WINDOW, clock=time.perf_counter):
        if not (isinstance(window, int) and window >= 1):
            raise ValueError(f"window: must be an integer >= 1, got {window!r}")
        prior = _s.LatencyCoeffs()
        for k, v in effective_coeffs(model).items():
            setattr(prior, k, v)
        self.model, self.window, self.clock = model, window, clock
        self.fit = _s.OnlineFit(prior)
        self.prior = _s.LatencyModel(prior)  # what the model would say without the fit
        self.steps = 0
        self._open: dict = {}
        self._sq, self._sq0, self._n = 0.0, 0.0, 0  # squared relative errors (model, prior) since report()

    def begin(self, key, items: list) -> None:
        """A step of `items` (``slocore.BatchItem``: tokens computed now, cached before, prefill)."""
        if not items:
            return
        if len(self._open) >= MAX_OPEN:
            self._open.pop(next(iter(self._open)))
        self._open[key] = (
            self.clock(),
            _s.OnlineFit.features(items),
            self.model.batch_time(items),
            self.prior.batch_time(items),
        )

    def end(self, key) -> None:
        rec = self._open.pop(key, None)
        if rec is None:
            return
        dt = self.clock() - rec[0]
        if not (dt > 0):
            return
        self.fit.observe(rec[1], dt)
        self._sq += (rec[2] / dt - 1.0) ** 2
        self._sq0 += (rec[3] / dt - 1.0) ** 2
        self._n += 1
        self.steps += 1
        if self.steps % self.window == 0:
            self.model.set_correction(1.0)
            self.model.set_coeffs(self.fit.solve())

    def report(self) -> dict:
        """Steps timed, the rms relative error of the model's step predictions since the last
        report and of the prior's on the same steps (None before any), and the coefficients
        now; starts a new error window."""
        rms = (self._sq / self._n) ** 0.5 if self._n else None
        rms0 = (self._sq0 / self._n) ** 0.5 if self._n else None
        self._sq, self._sq0, self._n = 0.0, 0.0, 0
        coeffs = effective_coeffs(self.model)
        return {"steps": self.steps, "rms_rel_error": rms, "prior_rms_rel_error": rms0, "coeffs": coeffs}
