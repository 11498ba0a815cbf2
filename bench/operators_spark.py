"""``make bench-operators ARGS="--spark"``: the stateful pipelines through Spark, their plans
running as tasks on the executors, against the hand-rolled Python baseline on the same log.

    make bench-operators ARGS="--spark"                        # 500,000 events, 3 runs each
    make bench-operators ARGS="--spark --events 20000 --runs 1 --workloads spend"

One embedded broker. Per workload (``fraud``: ``transactions_enriched``, the as-of join;
``spend``: ``spend_hourly``, 1-hour windows with grace; ``clicks``: ``clicks_last_search``,
the interval join) the backlog is written once (``bench/peers/producing.py``), then in turn, the
order rotating each repeat:

- the baseline (``bench/operators_consumer.py``): one Python process consuming the topics with
  confluent-kafka, decoding the JSON and running ``bench/operators_baseline.py``; timed from
  its first poll to its last record processed; its output compared with the reference on the
  columns it computes;
- the platform, cold (``python -m streaming run PIPELINE --until-caught-up``) with
  ``KAPPA_SPARK_MASTER=local[1]`` and ``local[2]``: one or two task slots for the state
  partitions' tasks; steady events/s and the output check as ``bench.peers.runs.cold_run``.

Prints the medians, the ratios (platform over baseline, two executors over one) and the load
average; writes ``bench/results/operators-spark-*.json``. Exit code 0 when every output was right.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from bench import operators_consumer
from bench.peers import report
from bench.peers.backlog import private_broker, write_workload_backlog
from bench.peers.engines import Platform, RunSpec
from bench.peers.outputs import compare
from bench.peers.report import median, num, ratio
from bench.peers.runs import cold_run, work_dir
from bench.peers.workloads import PARTITIONS
from streaming.settings import Settings

RESULTS = Path(__file__).resolve().parent / "results"
BASELINE = "baseline"
LABELS = (BASELINE, "spark-1", "spark-2")  # the table's columns, in order


def executors(label: str) -> int:
    """The platform's task slots in a contestant's label (``spark-N``: ``local[N]``)."""
    return int(label.removeprefix("spark-"))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m bench.operators_bench --spark", description=__doc__.split("\n")[0]
    )
    p.add_argument("--events", type=int, default=500_000, help="backlog per workload")
    p.add_argument("--keys", type=int, default=100_000, help="customers (a tenth: users)")
    p.add_argument("--workloads", default=",".join(operators_consumer.CASES))
    p.add_argument("--runs", type=int, default=3, help="runs of each, alternating (the median)")
    p.add_argument(
        "--executors",
        default="1,2",
        help="the platform's runs: local[N] for each N given; none: the baseline alone",
    )
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--keep", action="store_true", help="keep the work directory")
    args = p.parse_args(argv)
    unknown = set(args.workloads.split(",")) - set(operators_consumer.CASES)
    if unknown:
        p.error(
            f"unknown workloads {sorted(unknown)}; choose from {list(operators_consumer.CASES)}"
        )
    args.contestants = [BASELINE]
    if args.executors != "none":
        args.contestants += [f"spark-{n}" for n in args.executors.split(",")]
    if not set(args.contestants) <= set(LABELS):
        p.error(f"--executors: 1, 2, 1,2 or none, not {args.executors}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    results = run(args)
    print()
    print(render(results))
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"operators-spark-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(results, indent=2, default=str))
    print(f"\nresults: {path}")
    right = all(s["correct"] for w in results["summary"].values() for s in w.values())
    return 0 if right else 1


def run(args: argparse.Namespace) -> dict[str, Any]:
    with private_broker("kappa-operators-spark-", keep=args.keep) as (root, settings):
        engines = {
            label: Platform(
                settings, {"platform_env": {"KAPPA_SPARK_MASTER": f"local[{executors(label)}]"}}
            )
            for label in args.contestants[1:]
        }
        results: dict[str, Any] = {
            "machine": report.machine(),
            "args": vars(args),
            "load_start": os.getloadavg(),
            "workloads": {},
        }
        for name in args.workloads.split(","):
            results["workloads"][name] = measure(name, engines, settings, root, args)
    results["load_end"] = os.getloadavg()
    results["summary"] = summarize(results["workloads"])
    results["ratios"] = {name: ratios(s) for name, s in results["summary"].items()}
    return results


def measure(
    name: str,
    engines: dict[str, Platform],
    settings: Settings,
    root: Path,
    args: argparse.Namespace,
) -> dict[str, list[dict[str, Any]]]:
    """Every contestant ``args.runs`` times over one backlog, the order rotating."""
    backlog = write_workload_backlog(settings, name, args.keys, args.seed, args.events)
    workload, written, expected = backlog.workload, backlog.written, backlog.expected
    bootstrap = settings.kafka.bootstrap_servers
    _say(f"{name}: {written.total:,} records written in {backlog.seconds:.1f} s")
    contestants = args.contestants
    runs: dict[str, list[dict[str, Any]]] = {label: [] for label in contestants}
    for repeat in range(args.runs):
        shift = repeat % len(contestants)
        for label in contestants[shift:] + contestants[:shift]:
            run_id = f"{name}-{label}-{repeat}"
            if label == BASELINE:
                result = baseline_run(name, bootstrap, written.ends, expected)
            else:
                spec = RunSpec(workload, run_id, work_dir(root, run_id), bootstrap, False)
                result = cold_run(engines[label], spec, settings, written, expected)
                if not args.keep:
                    shutil.rmtree(spec.work, ignore_errors=True)
            runs[label].append(result)
            _say(_line(run_id, result))
    return runs


def baseline_run(
    name: str, bootstrap: str, ends: dict[tuple[str, int], int], expected: dict[Any, tuple]
) -> dict[str, Any]:
    load_before = os.getloadavg()
    done = operators_consumer.run(name, bootstrap, ends, PARTITIONS)
    load_after = os.getloadavg()
    verdict = compare(done.pop("table"), operators_consumer.expected(name, expected))
    return {
        **done,
        "verdict": verdict.as_dict(),
        "load_before": load_before,
        "load_after": load_after,
    }


def events_per_s(label: str, result: dict[str, Any]) -> float | None:
    """The baseline's rate over its whole run; the platform's steady rate (after the first
    quarter of the log, which starts the JVM and warms it up)."""
    return result["events_per_s"] if label == BASELINE else result["steady_events_per_s"]


def summarize(workloads: dict[str, dict[str, list]]) -> dict[str, dict[str, dict[str, Any]]]:
    """Per workload and contestant: medians over the runs whose output was right."""
    summary: dict[str, dict[str, dict[str, Any]]] = {}
    for name, runs in workloads.items():
        for label, done in runs.items():
            right = [r for r in done if r["verdict"]["same"]]
            summary.setdefault(name, {})[label] = {
                "correct": len(right) == len(done),
                "runs": len(done),
                "events_per_s": median([events_per_s(label, r) for r in right]),
                "wall_s": median([r["seconds" if label == BASELINE else "wall_s"] for r in right]),
                "load_1min": [r["load_before"][0] for r in done],
            }
    return summary


def ratios(summary: dict[str, dict[str, Any]]) -> dict[str, float | None]:
    """One workload's platform events/s over the baseline's, and two executors over one."""
    rate = {label: s["events_per_s"] for label, s in summary.items()}
    return {
        "spark-1/baseline": ratio(rate.get("spark-1"), rate[BASELINE]),
        "spark-2/baseline": ratio(rate.get("spark-2"), rate[BASELINE]),
        "spark-2/spark-1": ratio(rate.get("spark-2"), rate.get("spark-1")),
    }


def render(results: dict[str, Any]) -> str:
    m, args = results["machine"], results["args"]
    load = lambda values: "/".join(f"{v:.2f}" for v in values)  # noqa: E731
    lines = [
        f"operators through Spark on {m['date']}: {m['cpu']}, {m['cores']} cores, "
        f"{m['memory_gb']} GB, Python {m['python']}, {m['java']}",
        f"load average (1/5/15 min) at start {load(results['load_start'])}, at end "
        f"{load(results['load_end'])}",
        f"{args['events']:,} events per workload, {args['keys']:,} keys, medians of {args['runs']}"
        " runs; baseline: whole run; platform: steady state (after the first quarter of the log)",
        "",
        f"{'workload':9}{'baseline ev/s':>14}{'1 exec ev/s':>13}{'2 exec ev/s':>13}"
        f"{'1/base':>8}{'2/base':>8}{'2/1':>6}  wall s (base/1/2)  output  load (1 min)",
    ]
    none: dict[str, Any] = {"events_per_s": None, "wall_s": None}
    for name, ran in results["summary"].items():
        r = results["ratios"][name]
        s = {label: ran.get(label, none) for label in LABELS}
        right = all(done["correct"] for done in ran.values())
        walls = "/".join(num(s[label]["wall_s"], ".1f") for label in LABELS)
        loads = [v for done in ran.values() for v in done["load_1min"]]
        lines.append(
            f"{name:9}{num(s[BASELINE]['events_per_s'], ',.0f'):>14}"
            f"{num(s['spark-1']['events_per_s'], ',.0f'):>13}"
            f"{num(s['spark-2']['events_per_s'], ',.0f'):>13}"
            f"{num(r['spark-1/baseline'], '.2f'):>8}{num(r['spark-2/baseline'], '.2f'):>8}"
            f"{num(r['spark-2/spark-1'], '.2f'):>6}  {walls:17}  "
            f"{'right' if right else 'WRONG':6}  {min(loads):.1f}-{max(loads):.1f}"
        )
    return "\n".join(lines)


def _line(run_id: str, r: dict[str, Any]) -> str:
    v = r["verdict"]
    verdict = f"output SAME ({v['rows']:,} rows)" if v["same"] else f"output DIFFERENT {v}"
    rate = r.get("events_per_s", r.get("steady_events_per_s"))
    wall = r.get("seconds", r.get("wall_s"))
    load = r["load_before"][0]
    return f"{run_id}: {wall:.1f} s, {num(rate, ',.0f')} ev/s, load {load:.2f}, {verdict}"


def _say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)
