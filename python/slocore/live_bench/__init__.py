"""``slocore bench live``: serving stacks compared on real engines, paired and interleaved.
Modules: traces (the two-class and shared-prefix multi-turn traces, token prompts), procs
(engines and routers as processes), stacks (names to router policies), stats (paired
differences with confidence intervals), runner (the run loop), report (markdown), cli."""
