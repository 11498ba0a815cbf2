"""What reusing one SparkSession would save: deployments one after another in one process.

    python -m bench.peers.session_reuse --workload latest --events 500000 --processes 2

``python -m streaming run`` (what ``kappa run``, ``kappa up`` and Dagster launch) starts one
process, and so one driver JVM and one SparkSession, per deployment: a deployment is stopped
with a signal to its process, and a crash or an out-of-memory error takes one deployment down,
not its neighbours. This measures what that costs. One embedded broker, one backlog (as
``make bench-peers`` writes it); each of ``--processes`` processes builds one session and runs
``--deployments`` fresh deployments of the workload's pipeline on it, one after another, each
from offset 0 until caught up, each with a home of its own. The first deployment's time counts
from the process start (a cold ``python -m streaming run``); a later one's from its own start
(the session, the JVM's JIT and Spark's Python workers already warm). Every deployment's table
is checked against the reference before its time counts.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil

from bench.peers.backlog import private_broker, write_workload_backlog
from bench.peers.outputs import compare, read_delta
from streaming.settings import REPO_ROOT


def child(pipeline_name: str, homes: list[Path]) -> None:
    """In the measured process: one session, then each deployment in turn; one JSON line each."""
    from streaming.define.registry import get_pipeline
    from streaming.deployment import Deployment
    from streaming.run.options import RunOptions
    from streaming.run.runner import PipelineRunner
    from streaming.settings import load_settings
    from streaming.spark.session import build_spark_session

    spark = None
    for home in homes:
        started = time.time()
        settings = load_settings(env={**os.environ, "KAPPA_HOME": str(home)})
        if spark is None:
            spark = build_spark_session(settings, app_name="kappa-session-reuse")
        pipeline = get_pipeline(settings.pipelines, pipeline_name)
        deployment = Deployment(pipeline.name, pipeline.version, settings.home)
        options = RunOptions(mode="until_caught_up", report_every_s=3600)
        PipelineRunner(spark, pipeline, deployment, settings, options).run()
        line = {"started": started, "done": time.time(), "table": str(deployment.table_path)}
        print(json.dumps(line), flush=True)


def measure(args: argparse.Namespace) -> dict[str, Any]:
    cold: list[float] = []
    warm: list[float] = []
    loads: list[float] = []
    with private_broker("kappa-reuse-") as (root, settings):
        backlog = write_workload_backlog(settings, args.workload, args.keys, 1, args.events)
        workload, expected = backlog.workload, backlog.expected
        env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": settings.kafka.bootstrap_servers}
        for n in range(args.processes):
            homes = [str(root / f"p{n}-d{i}") for i in range(args.deployments)]
            loads.append(os.getloadavg()[0])
            argv = [sys.executable, "-m", "bench.peers.session_reuse", "--child"]
            argv += [workload.pipeline, *homes]
            proc = subprocess.Popen(argv, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, text=True)
            process_start = psutil.Process(proc.pid).create_time()
            out, _ = proc.communicate(timeout=1800)
            if proc.returncode != 0:
                raise SystemExit(f"the measured process exited with {proc.returncode}")
            for i, line in enumerate(out.splitlines()):
                row = json.loads(line)
                verdict = compare(read_delta(args.workload, Path(row["table"])), expected)
                if not verdict.same:
                    raise SystemExit(f"deployment {i} of process {n}: {verdict.line()}")
                if i == 0:
                    cold.append(row["done"] - process_start)
                else:
                    warm.append(row["done"] - row["started"])
                what = "cold, from the process start" if i == 0 else "on the warm session"
                took = (cold if i == 0 else warm)[-1]
                print(f"process {n} deployment {i}: {took:.1f} s ({what}), output SAME")
            loads.append(os.getloadavg()[0])
    return {"cold": cold, "warm": warm, "loads": loads}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.peers.session_reuse", description=__doc__
    )
    parser.add_argument("--workload", default="latest")
    parser.add_argument("--events", type=int, default=500_000)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--deployments", type=int, default=3, help="per process, in turn")
    parser.add_argument("--child", nargs="+", metavar=("PIPELINE", "HOME"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child[0], [Path(home) for home in args.child[1:]])
        return 0
    found = measure(args)
    cold, warm = statistics.median(found["cold"]), statistics.median(found["warm"])
    print(
        f"{args.workload}, {args.events:,} records: cold process {cold:.1f} s (median of "
        f"{len(found['cold'])}), on a reused session {warm:.1f} s (median of "
        f"{len(found['warm'])}): {cold / warm:.2f}x; load (1 min) "
        f"{min(found['loads']):.2f}-{max(found['loads']):.2f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
