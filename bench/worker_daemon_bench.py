"""What the platform's worker daemon saves Spark's Python workers (``bench.worker_daemon_bench``).

    flock /tmp/kappa-heavy.lock .venv/bin/python -m bench.worker_daemon_bench

A deployment's micro-batch is a Spark job of a few small Python tasks, and a reused worker runs a
full garbage collection after each one. This runs ``--jobs`` jobs of two such tasks (each imports
the platform's task modules, builds an Arrow table and some garbage, as a planned batch's task
does) in a fresh local session, once with Spark's own daemon (``pyspark.daemon``, the baseline)
and once with the platform's (``streaming.spark.worker_daemon``), alternating, ``--repeat`` times
each. Prints, per run, the median wall time of a job and the CPU seconds the daemon and its
workers spent per job, after a warm-up; then the ratios of the medians.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

BASELINE = "pyspark.daemon"
PLATFORM = "streaming.spark.worker_daemon"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m bench.worker_daemon_bench", description=__doc__.split("\n")[0]
    )
    p.add_argument("--jobs", type=int, default=400, help="measured jobs per run")
    p.add_argument("--repeat", type=int, default=2, help="runs of each daemon")
    p.add_argument("--run", choices=[BASELINE, PLATFORM], help=argparse.SUPPRESS)
    return p.parse_args(argv)


def task(rows):  # type: ignore[no-untyped-def]
    """One small task: what a planned batch's task loads, an Arrow table, some garbage."""
    import pyarrow as pa

    import streaming.run.partition_task  # noqa: F401

    values = list(rows)
    _table = pa.table({"key": [str(v) for v in values], "value": values})
    _garbage = [{"key": str(i), "value": [i, i + 1]} for i in range(2_000)]
    yield os.getpid(), os.getppid()


def cpu_seconds(pids: set[int]) -> float:
    """User and system CPU of the live processes among ``pids``."""
    total = 0.0
    for pid in pids:
        try:
            times = psutil.Process(pid).cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def run_one(daemon: str, jobs: int) -> dict[str, float]:
    """``jobs`` jobs in a fresh session whose workers fork from ``daemon``."""
    from bench.support.settings import private_settings
    from streaming.spark.session import build_spark_session

    with tempfile.TemporaryDirectory(prefix="kappa-daemon-") as home:
        settings = private_settings(
            Path(home) / "home", full_jit=True, **{"spark.conf.spark.python.daemon.module": daemon}
        )
        session = build_spark_session(settings, app_name="daemon-bench")
        context = session.sparkContext

        def one_job() -> set[int]:
            out = context.parallelize(range(200), 2).mapPartitions(task).collect()
            return {pid for pair in out for pid in pair}

        pids: set[int] = set()
        for _ in range(20):
            pids |= one_job()
        before = cpu_seconds(pids)
        walls = []
        for _ in range(jobs):
            started = time.perf_counter()
            pids |= one_job()
            walls.append(time.perf_counter() - started)
        spent = cpu_seconds(pids) - before
        session.stop()
    return {"job_ms": statistics.median(walls) * 1000, "cpu_ms_per_job": spent / jobs * 1000}


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.run:
        print(json.dumps(run_one(args.run, args.jobs)))
        return
    print(f"load average before: {os.getloadavg()}; {args.jobs} jobs of 2 tasks per run")
    results: dict[str, list[dict[str, float]]] = {BASELINE: [], PLATFORM: []}
    for _ in range(args.repeat):
        for daemon in (BASELINE, PLATFORM):
            cmd = [sys.executable, "-m", "bench.worker_daemon_bench", "--run", daemon]
            out = subprocess.run(
                [*cmd, "--jobs", str(args.jobs)], capture_output=True, text=True, check=True
            )
            figures = json.loads(out.stdout.strip().splitlines()[-1])
            results[daemon].append(figures)
            print(
                f"{daemon:32} job {figures['job_ms']:6.1f} ms  "
                f"workers' CPU {figures['cpu_ms_per_job']:6.1f} ms/job",
                flush=True,
            )
    medians = {
        daemon: {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        for daemon, runs in results.items()
    }
    for key in ("job_ms", "cpu_ms_per_job"):
        ratio = medians[PLATFORM][key] / medians[BASELINE][key]
        print(f"{key}: {medians[BASELINE][key]:.1f} -> {medians[PLATFORM][key]:.1f} ({ratio:.2f}x)")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
