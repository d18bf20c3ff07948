"""Serving: an OpenAI-compatible router over real engines (vLLM / vLLM-Ascend) and an
emulated engine that serves the same API with token timing from a hardware profile.

Modules: ``config`` (YAML), ``engine`` (emulated engine), ``backends`` (engine clients,
``/metrics`` polling, instance views), ``router`` (the HTTP router), ``metrics``
(Prometheus), ``loadgen`` (``slocore bench serve``), ``openai`` (request parsing).
Needs the ``serve`` extra: ``pip install "slocore[serve]"``.
"""
