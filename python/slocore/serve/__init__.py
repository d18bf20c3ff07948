"""Serving: an OpenAI-compatible router over real engines (vLLM / vLLM-Ascend) and an
emulated engine that serves the same API with token timing from a hardware profile.

Router modules (``router`` only wires them; see its docstring): ``pool`` (backends,
quarantine), ``health`` (``/metrics`` polling), ``dispatch`` (policies as awaitable
assignments), ``upstream`` (the one request path to an engine; ``upstream_lean`` its lean
HTTP client), ``stream`` (request context, token relay), ``colocated`` / ``pd`` (the two
modes' flows), ``handler`` (the OpenAI endpoints, retries), ``slo`` (SLO and priority of a
request), ``admin`` (admin API), ``metrics`` (Prometheus). Also: ``config`` (YAML schema),
``backends`` (instance views), ``engine`` (emulated engine), ``loadgen`` (``slocore bench
serve``), ``openai`` (request parsing), ``eventloop``. Needs the ``serve`` extra: ``pip install "slocore[serve]"``.
"""
