"""A calibrated digital twin: measure a running engine's latency model (``slocore profile``)
and compare the simulator with that profile against the real engine on one trace
(``slocore bench twin``). See docs/fidelity.md.

  client.py    an OpenAI-compatible engine seen from outside: identity, /metrics, timed streams
  design.py    the designed request set and what each experiment measures
  fitmodel.py  the latency model's features and the non-negative relative-error fit
  profiler.py  ``slocore profile``: run the design, fit, write the profile JSON
  compare.py   ``slocore bench twin``: one trace, real vs simulated, at several loads
"""
