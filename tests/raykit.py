"""A local Ray for the Ray tests. Ray waits a fixed 30 s for its raylet to register; on a
loaded 2-core CI machine that can run out once. Then the processes the first try started
are shut down (left running, they fail a later test as unraisable ResourceWarnings) and it
starts once more; a second failure is the test's."""

import ray


def init_local_ray(**kwargs) -> None:
    opts = dict(include_dashboard=False, log_to_driver=False, configure_logging=False, **kwargs)
    try:
        ray.init(**opts)
    except Exception as e:  # Ray raises a bare Exception on the startup timeout
        if "timed out during startup" not in str(e):
            raise
        ray.shutdown()
        ray.init(**opts)
