"""How many deployments one engine carries, by its number of executors (``make bench-capacity``).

The engine alone, without Dagster (a deployment's Dagster run costs the same whatever the
executors), on a Spark standalone cluster of N workers of one core each (``kappa cluster``),
while the demo producer writes 200 events/s. The demo's deployments are started in the engine in
steps (6, 12, then all 18: every demo pipeline and a second version of
``transactions_enriched``); after each step every table's lag is sampled over a window, measured
from outside the engine (``bench.table_freshness``). One table per executor count and step: the
lag p50 and p95 of the median table, the worst table's p95, the load average and the cores the
executors used. Results go to ``bench/results/capacity-<time>.json``.

On a 2-core machine the driver, the broker and the producer share the cores with the executors,
so the figures are a floor for an engine whose executors have machines of their own.

    python -m bench.engine_capacity [--executors 1 2] [--steps 6 12 18] [--window-s 60]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import psutil

from bench.platform_load import EXTRA, Platform, bench_settings, wait_first_commits
from bench.table_freshness import summary
from kappa.broker import EmbeddedBroker
from kappa.cluster import SparkCluster
from kappa.ports import free_port
from streaming.define.registry import all_topics, get_pipeline, pipeline_names, published_topics
from streaming.engine.client import ensure_engine, stop_engine
from streaming.kafka.admin import ensure_topics
from streaming.processes import ManagedProcess
from streaming.run.options import LaunchOptions
from streaming.settings import REPO_ROOT, Settings


def capacity_settings(home: Path, executors: int) -> Settings:
    """The bench's settings, the engine on a standalone cluster of ``executors`` workers of one
    core."""
    port = free_port()
    cluster = {"cluster.port": port, "cluster.ui_port": free_port(), "cluster.workers": executors}
    settings = bench_settings(home, **cluster, **{"cluster.worker_cores": 1})
    return settings.model_copy(
        update={"spark": settings.spark.model_copy(update={"master": settings.cluster.master_url})}
    )


def _executor_cpu() -> float:
    """CPU seconds used so far by the cluster's executors and their Python workers."""
    total = 0.0
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if "CoarseGrainedExecutorBackend" not in " ".join(proc.info["cmdline"] or []):
                continue
            for member in [proc, *proc.children(recursive=True)]:
                times = member.cpu_times()
                total += times.user + times.system
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return total


def measure(executors: int, steps: list[int], window_s: float, rate: float) -> list[dict]:
    home = Path(f"/tmp/kappa-bench-capacity-{executors}")
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    settings = capacity_settings(home, executors)
    names = pipeline_names(settings.pipelines)
    deployments = [(n, get_pipeline(settings.pipelines, n).version) for n in names] + [EXTRA]
    broker, cluster = EmbeddedBroker(settings), SparkCluster(settings)
    producer: ManagedProcess | None = None
    rows: list[dict] = []
    platform: Platform | None = None
    try:
        broker.start()
        topics = {*all_topics(settings.pipelines), *published_topics(settings.pipelines)}
        ensure_topics(settings, sorted(topics))
        cluster.start()
        argv = [sys.executable, "-m", "kappa.cli", "demo", "produce", "--rate", str(rate)]
        env = {**os.environ, **settings.to_env()}
        producer = ManagedProcess("producer", argv, home / "producer.log", env=env, cwd=REPO_ROOT)
        producer.start()
        engine = ensure_engine(settings)
        options = LaunchOptions().model_dump()
        # The log's ends are sampled for every topic from the start; the tables join as their
        # deployments start.
        platform = Platform(settings, deployments)
        platform.tables.clear()
        running: list[tuple[str, str]] = []
        for step in steps:
            added = deployments[len(running) : step]
            since = time.time()
            for name, version in added:
                engine.submit(name, version, options, run_id=None)
                platform.add((name, version))
            running += added
            platform.lags = {d: [] for d in running}
            # Every running table has committed since the step began (the new ones for the
            # first time).
            firsts = wait_first_commits(platform, since, 300)
            cpu_before, started = _executor_cpu(), time.monotonic()
            platform.loads = []
            end = time.time() + window_s
            while time.time() < end:
                platform.sample(with_rss=False)
                time.sleep(1.0)
            spent = _executor_cpu() - cpu_before
            rows.append(
                _row(executors, running, platform, firsts, spent / (time.monotonic() - started))
            )
            print(_line(rows[-1]), flush=True)
    finally:
        if producer is not None:
            producer.stop()
        stop_engine(settings.home)
        cluster.stop()
        broker.stop()
        if platform is not None:
            platform.close()
    return rows


def _row(
    executors: int,
    running: list[tuple[str, str]],
    platform: Platform,
    firsts: dict[tuple[str, str], float | None],
    executor_cores: float,
) -> dict[str, Any]:
    lags = [summary(platform.lags[d]) for d in running if platform.lags[d]]
    p50s, p95s = [lag["p50_s"] for lag in lags], [lag["p95_s"] for lag in lags]
    return {
        "executors": executors,
        "deployments": len(running),
        "committing": sum(1 for d in running if firsts.get(d) is not None),
        "lag_p50_median_s": statistics.median(p50s) if p50s else None,
        "lag_p95_median_s": statistics.median(p95s) if p95s else None,
        "lag_p95_worst_s": max(p95s, default=None),
        "load_mean": statistics.mean(platform.loads) if platform.loads else None,
        "executor_cores_busy": executor_cores,
    }


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


HEADER = (
    f"{'executors':>9} {'deployments':>11} {'committing':>10} {'lag p50':>8} {'lag p95':>8} "
    f"{'worst p95':>9} {'load':>5} {'executor cores':>14}"
)


def _line(row: dict[str, Any]) -> str:
    return (
        f"{row['executors']:>9} {row['deployments']:>11} {row['committing']:>10} "
        f"{_num(row['lag_p50_median_s']):>8} {_num(row['lag_p95_median_s']):>8} "
        f"{_num(row['lag_p95_worst_s']):>9} {_num(row['load_mean']):>5} "
        f"{row['executor_cores_busy']:>14.2f}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executors", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--steps", type=int, nargs="+", default=[6, 12, 18])
    parser.add_argument("--window-s", type=float, default=60.0)
    parser.add_argument("--rate", type=float, default=200.0)
    args = parser.parse_args(argv)
    print(f"load before: {os.getloadavg()[0]:.1f}; lag of the median table, seconds")
    print(HEADER, flush=True)
    rows = []
    for executors in args.executors:
        rows += measure(executors, sorted(args.steps), args.window_s, args.rate)
    out = REPO_ROOT / "bench" / "results" / f"capacity-{int(time.time())}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    measured = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    out.write_text(json.dumps({"measured_at": measured, "rows": rows}, indent=2))
    print(f"\nresults: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
