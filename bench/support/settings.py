"""Settings for a private platform home and a private broker port, so runs never share state."""

from __future__ import annotations

from pathlib import Path

from kappa.ports import free_port
from streaming.settings import Settings, load_settings

# Test JVMs live seconds to minutes on small data, where C2 compiles code that has no time left
# to pay back: capped at C1, a Spark driver spends about half the CPU (bench/RESULTS.md, What
# the suite cost). The platform itself keeps the full JIT, and so do benchmarks of throughput.
SHORT_LIVED_JIT = "-XX:TieredStopAtLevel=1"


def private_settings(
    home: Path,
    broker_port: int | None = None,
    *,
    controller_port: int | None = None,
    full_jit: bool = False,
    **overrides: object,
) -> Settings:
    """Settings rooted at ``home``, with their own embedded-broker and Dagster ports (or the
    broker ports given, to share a running broker).

    Read from the config file only (not the environment), with ``overrides`` as dotted keys.
    Spark's and the broker's JVMs run with the JIT capped at C1 (:data:`SHORT_LIVED_JIT`) unless
    ``full_jit``: a test broker starts in about half the time and carries little traffic.
    """
    port = broker_port or free_port()
    values = {
        "home": str(home),
        "broker.port": port,
        "broker.controller_port": controller_port or free_port(),
        # A test broker holds little: a small heap leaves the memory to Spark.
        "broker.heap": "384m",
        "kafka.bootstrap_servers": f"127.0.0.1:{port}",
        "spark.master": "local[2]",
        "dagster.port": free_port(),
        # A version change is seen at the daemon's next sensor loop (every 5 s), not 10 s later.
        "dagster.sensor_interval_s": 2,
        **overrides,
    }
    if not full_jit:
        for role in ("driver", "executor"):
            values.setdefault(f"spark.conf.spark.{role}.extraJavaOptions", SHORT_LIVED_JIT)
        values.setdefault("broker.java_options", SHORT_LIVED_JIT)
    return load_settings(env={}, overrides=values)
