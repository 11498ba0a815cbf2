"""The performance benchmark: ``make bench`` (``python -m bench.perf``).

    make bench                                    # defaults below
    make bench ARGS="--events 10000000"           # any option of this module

One run, on a fresh embedded broker and a fresh platform home: produce the workload (bench/
workload.py), time the baseline (bench/baseline.py), then the ``customers`` pipeline cold, in a
continuous deployment under a fixed produce rate, rebuilding a new version from offset 0, and in
this process with Spark warm (bench/measures.py). Every table is checked against the workload's
reference. Prints the table and the targets; writes ``bench/results/perf-*.json``. Exit code 0
only if the results are correct and every applicable target passes.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import measures, report
from bench.baseline import run_baseline
from bench.workload import TOPIC, Workload
from kappa.broker import EmbeddedBroker
from streaming.kafka.admin import ensure_topics

RESULTS = Path(__file__).resolve().parent / "results"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.perf", description=__doc__.split("\n")[0])
    p.add_argument("--events", type=int, default=1_000_000, help="backlog size (1,000,000)")
    p.add_argument("--keys", type=int, default=100_000, help="distinct keys (100,000)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--baseline-runs", type=int, default=3, help="baseline repetitions (median)")
    p.add_argument(
        "--batch-events", type=int, default=200_000, help="steady-state micro-batch size"
    )
    p.add_argument("--rate", type=int, default=5_000, help="latency: events/s (5,000)")
    p.add_argument("--latency-seconds", type=float, default=60.0, help="latency window (60)")
    p.add_argument(
        "--trigger-interval",
        default="0 seconds",
        help="latency: the deployment's trigger interval (default: back to back)",
    )
    p.add_argument(
        "--rebuild-events",
        type=int,
        default=2_000_000,
        help="topic size for the rebuild (tops up the topic; the target is for 10,000,000)",
    )
    p.add_argument("--keep-home", action="store_true", help="keep the platform home afterwards")
    return p.parse_args(argv)


def run(args: argparse.Namespace) -> dict[str, Any]:
    bench, settings = measures.BenchEnv.private("kappa-bench-")
    home = bench.home
    broker = EmbeddedBroker(settings)
    broker.start()
    results: dict[str, Any] = {
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "events": args.events,
        "keys": args.keys,
        "args": vars(args),
    }
    try:
        ensure_topics(settings, [TOPIC])
        workload = Workload(keys=args.keys, seed=args.seed)
        results["produce_s"] = workload.produce(bench.bootstrap, args.events)
        backlog_end, backlog_expected = bench.topic_end(), dict(workload.expected)

        runs = []
        for _ in range(args.baseline_runs):
            seconds, state = run_baseline(bench.bootstrap)
            runs.append(seconds)
            baseline_ok = {k: v["updated_at"] for k, v in state.items()} == workload.expected
        wall = statistics.median(runs)
        results["baseline"] = {
            "runs_s": runs,
            "wall_s": wall,
            "events_per_s": args.events / wall,
            "correct": {"ok": baseline_ok},
        }
        _step("baseline", results["baseline"])
        results["cold"] = measures.measure_cold(bench, workload)
        _step("cold", results["cold"])
        results["latency"] = measures.measure_latency(
            bench, workload, args.rate, args.latency_seconds, args.trigger_interval
        )
        _step("latency", results["latency"])
        results["rebuild"] = measures.measure_rebuild(bench, workload, args.rebuild_events)
        _step("rebuild", results["rebuild"])
        # Last: it starts a SparkSession in this process, which would otherwise sit in memory
        # next to the jobs above. It reads the first --events records only.
        results["steady"] = measures.measure_steady(
            bench, backlog_end, backlog_expected, args.batch_events
        )
        _step("steady", results["steady"])
    finally:
        broker.stop()
        if not args.keep_home:
            shutil.rmtree(home, ignore_errors=True)
    checks = ["baseline", "cold", "latency", "rebuild", "steady"]
    results["correct"] = all(results[c]["correct"]["ok"] for c in checks)
    results["peak_rss_bytes"] = max(
        results[c]["peak_rss_bytes"] for c in ("cold", "latency", "rebuild")
    )
    return results


def _step(name: str, values: dict[str, Any]) -> None:
    shown = {k: round(v, 3) if isinstance(v, float) else v for k, v in values.items()}
    print(f"[{time.strftime('%H:%M:%S')}] {name}: {shown}", flush=True)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    results = run(args)
    print()
    print(report.render(results))
    path = report.write_json(results, RESULTS)
    print(f"\nresults: {path}")
    return 0 if report.passed(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
