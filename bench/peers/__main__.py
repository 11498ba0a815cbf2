"""``make bench-peers`` (``python -m bench.peers``): the platform against Kafka Streams, Quix
Streams and Spark's own operators on the same logs; see ``bench/peers/__init__.py``.

    make bench-peers                                   # the defaults below, about 1.5 h
    make bench-peers ARGS="--events 50000 --runs 1 --latency-seconds 5"

One embedded broker. Per workload: the backlog is written once, and every engine runs cold over
it ``--runs`` times (engines in turn, the order rotating); then every engine runs at the fixed
rate ``--rate-repeats`` times (default ``--runs``), each on fresh topics. Then the stateful
workloads once more on disordered data (``semantics``). Prints the table, the ratios and the
targets; writes ``bench/results/peers-*.json``. Exit code 0 when every run's output was right.
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import time
from pathlib import Path
from typing import Any

from bench.peers import report, semantics
from bench.peers.backlog import private_broker, write_workload_backlog
from bench.peers.engines import ENGINES, Engine, RunSpec
from bench.peers.runs import cold_run, rate_run, work_dir
from bench.peers.workloads import IN_ORDER, WORKLOADS, make
from streaming.settings import Settings

RESULTS = Path(__file__).resolve().parent.parent / "results"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.peers", description=__doc__.split("\n")[0])
    p.add_argument("--events", type=int, default=1_000_000, help="backlog per workload")
    p.add_argument("--keys", type=int, default=100_000, help="customers (a tenth: users)")
    p.add_argument("--workloads", default=",".join(WORKLOADS))
    p.add_argument("--engines", default=",".join(ENGINES))
    p.add_argument(
        "--runs",
        "--repeats",
        dest="repeats",
        type=int,
        default=3,
        help="cold runs per figure, in this one session (the median)",
    )
    p.add_argument("--rate-repeats", type=int, help="fixed-rate runs per figure (default: --runs)")
    p.add_argument("--rate", type=int, default=5_000, help="records/s of the latency runs")
    p.add_argument("--latency-seconds", type=float, default=30.0, help="measured, per run")
    p.add_argument("--warmup-seconds", type=float, default=15.0, help="at the rate, unmeasured")
    p.add_argument(
        "--rate-history",
        type=int,
        default=0,
        help="records of the workload's mix in the log before a fixed-rate run starts (its "
        "table that large while latency is measured)",
    )
    p.add_argument("--no-latency", action="store_true", help="cold runs only")
    p.add_argument(
        "--latency-workloads", help="the workloads with fixed-rate runs (default: --workloads)"
    )
    p.add_argument("--semantics-events", type=int, default=100_000, help="0: skip")
    p.add_argument(
        "--commit-interval-ms",
        type=int,
        default=100,
        help="Kafka Streams' and Quix's commit interval (Kafka Streams' exactly-once default)",
    )
    p.add_argument("--ks-threads", type=int, default=os.cpu_count() or 1)
    p.add_argument(
        "--platform-env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an environment variable for the platform's runs (A/B of a setting), repeatable",
    )
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--keep", action="store_true", help="keep the work directory")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.rate_repeats is None:
        args.rate_repeats = args.repeats
    results = run(args)
    print()
    print(report.render(results))
    path = report.write_json(results, RESULTS)
    print(f"\nresults: {path}")
    ok = all(s["correct"] for engines in results["summary"].values() for s in engines.values())
    return 0 if ok else 1


def run(args: argparse.Namespace) -> dict[str, Any]:
    with private_broker("kappa-peers-", keep=args.keep) as (root, settings):
        options = {
            "commit_interval_ms": args.commit_interval_ms,
            "ks_threads": args.ks_threads,
            "platform_env": dict(item.split("=", 1) for item in args.platform_env),
        }
        engines = [ENGINES[name](settings, options) for name in args.engines.split(",")]
        for engine in engines:
            started = time.perf_counter()
            engine.prepare()
            _say(f"{engine.name} ready ({time.perf_counter() - started:.1f} s)")
        results: dict[str, Any] = {
            "machine": report.machine(),
            "args": vars(args),
            "load_start": os.getloadavg(),
            "workloads": {},
            "not_run": {
                e.name: {"workloads": missing, "why": e.why_not}
                for e in engines
                if (missing := [w for w in args.workloads.split(",") if w not in e.workloads])
            },
        }
        for name in args.workloads.split(","):
            results["workloads"][name] = measure_workload(name, engines, settings, root, args)
        if args.semantics_events:
            _say("disordered data (semantics)")
            results["semantics"] = semantics.run(
                engines,
                settings,
                root,
                args.semantics_events,
                max(args.keys // 10, 10),
                args.seed,
                tuple(args.workloads.split(",")),
            )
    results["load_end"] = os.getloadavg()
    results["summary"] = report.summarize(results)
    results["ratios"] = report.ratios(results["summary"])
    results["targets"] = report.targets(results)
    return results


def measure_workload(
    name: str, engines: list[Engine], settings: Settings, root: Path, args: argparse.Namespace
) -> dict[str, Any]:
    """Cold runs on one backlog, then fixed-rate runs, for every engine that applies."""
    playing = [e for e in engines if name in e.workloads]
    runs: dict[str, dict[str, list]] = {e.name: {"cold": [], "rate": []} for e in playing}
    # The joins' backlog is in order (see semantics for disordered data).
    backlog = write_workload_backlog(settings, name, args.keys, args.seed, args.events)
    workload = backlog.workload
    _say(f"{name}: {backlog.written.total:,} records written in {backlog.seconds:.1f} s")
    for repeat in range(args.repeats):
        for engine in _rotated(playing, repeat):
            run_id = f"{name}-{engine.name}-cold-{repeat}"
            spec = RunSpec(
                workload,
                run_id,
                work_dir(root, run_id),
                settings.kafka.bootstrap_servers,
                False,
            )
            result = cold_run(engine, spec, settings, backlog.written, backlog.expected)
            runs[engine.name]["cold"].append(result)
            _say(_cold_line(run_id, result))
            _clean(spec, args)
    if args.no_latency or name not in (args.latency_workloads or args.workloads).split(","):
        return runs
    for repeat in range(args.rate_repeats):
        for engine in _rotated(playing, repeat):
            run_id = f"{name}-{engine.name}-rate-{repeat}"
            spec = RunSpec(
                workload, run_id, work_dir(root, run_id), settings.kafka.bootstrap_servers, True
            )
            result = rate_run(
                engine,
                spec,
                settings,
                functools.partial(make, name, args.keys, args.seed + 1 + repeat, IN_ORDER),
                args.rate,
                args.latency_seconds,
                args.warmup_seconds,
                args.rate_history,
            )
            runs[engine.name]["rate"].append(result)
            _say(_rate_line(run_id, result))
            _clean(spec, args)
    return runs


def _rotated(engines: list[Engine], repeat: int) -> list[Engine]:
    """Each repeat starts with another engine, so none always runs first (or after another)."""
    shift = repeat % len(engines) if engines else 0
    return engines[shift:] + engines[:shift]


def _clean(spec: RunSpec, args: argparse.Namespace) -> None:
    if not args.keep:
        shutil.rmtree(spec.work, ignore_errors=True)


def _cold_line(run_id: str, r: dict[str, Any]) -> str:
    steady = r["steady_events_per_s"]
    return (
        f"{run_id}: {r['wall_s']:.1f} s, steady "
        f"{'-' if steady is None else f'{steady:,.0f}'} ev/s, "
        f"RSS {r['peak_rss_bytes'] / report.GB:.2f} GB, load {r['load_before'][0]:.2f}, "
        f"{_verdict(r)}"
    )


def _rate_line(run_id: str, r: dict[str, Any]) -> str:
    return (
        f"{run_id}: p50 {r['p50_s']:.2f} s, p95 {r['p95_s']:.2f} s ({r['records_measured']:,} "
        f"records), RSS {r['peak_rss_bytes'] / report.GB:.2f} GB, load "
        f"{r['load_before'][0]:.2f}, {_verdict(r)}"
    )


def _verdict(r: dict[str, Any]) -> str:
    v = r["verdict"]
    if v["same"]:
        return f"output SAME ({v['rows']:,} rows)"
    examples = "; ".join(v["examples"])
    return (
        f"output DIFFERENT ({v['missing']} missing, {v['extra']} extra, {v['differ']} differ; "
        f"{examples})"
    )


def _say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
