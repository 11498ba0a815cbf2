"""The run host: one process that executes every streaming deployment's Dagster run as a thread.

A deployment's run only relays what its query in the engine reports, yet a process of its own
loads the whole code location, about 0.3 GB each: the whole demo's 18 runs held 5 GB. The run
launcher (``assets.run_launcher``) hands such runs to the host instead (``client``), which
executes each with Dagster's own run execution in a thread (``host``), behind a small
authenticated interface on 127.0.0.1 (``serve``). The run stays the deployment's handle: its
termination is seen by its step (``assets.engine_link``), and if the host dies, Dagster's run
monitoring finds its runs gone and resumes them in a new host, where each step takes its
deployment over again.
"""
