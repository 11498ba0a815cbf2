"""The results table, the performance targets with PASS/FAIL, and the JSON file."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REBUILD_TARGET_EVENTS = 10_000_000


@dataclass(frozen=True)
class Target:
    name: str
    measured: float
    limit: float
    higher_is_better: bool
    unit: str
    applies: bool = True

    @property
    def passed(self) -> bool:
        if self.higher_is_better:
            return self.measured >= self.limit
        return self.measured <= self.limit

    def line(self) -> str:
        if not self.applies:
            return f"  n/a   {self.name}: {self.measured:.2f} {self.unit}"
        sign = ">=" if self.higher_is_better else "<="
        verdict = "PASS" if self.passed else "FAIL"
        return f"  {verdict}  {self.name}: {self.measured:.2f} {self.unit} ({sign} {self.limit:g})"


def targets(r: dict[str, Any]) -> list[Target]:
    base = r["baseline"]
    rebuild = r["rebuild"]
    full_rebuild = rebuild["events"] >= REBUILD_TARGET_EVENTS
    return [
        Target(
            "steady-state throughput / baseline events/s",
            r["steady"]["events_per_s"] / base["events_per_s"],
            1.0,
            True,
            "x",
        ),
        Target(
            f"{r['events']:,} events end to end incl. start-up / baseline wall",
            r["cold"]["wall_s"] / base["wall_s"],
            2.8,
            False,
            "x",
        ),
        Target(
            f"continuous p95 latency at {r['latency']['rate']:,} events/s",
            r["latency"]["p95_s"],
            1.0,
            False,
            "s",
        ),
        Target(
            f"rebuild of {rebuild['events']:,} events incl. start-up"
            + ("" if full_rebuild else " (target is for 10M: --rebuild-events 10000000)"),
            rebuild["wall_s"],
            60.0,
            False,
            "s",
            applies=full_rebuild,
        ),
    ]


def rows(r: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(measure, value, what it includes)."""
    n = r["events"]
    base, cold, steady, lat, reb = (
        r["baseline"],
        r["cold"],
        r["steady"],
        r["latency"],
        r["rebuild"],
    )
    mb = 1024 * 1024
    return [
        ("workload", f"{n:,} events, {r['keys']:,} keys", "4 partitions, 1% tombstones, ~110 B"),
        ("produce", f"{r['produce_s']:.1f} s", "one idempotent producer, not a measure"),
        (
            "baseline",
            f"{base['wall_s']:.2f} s, {base['events_per_s']:,.0f} ev/s",
            f"median of {len(base['runs_s'])}; consumer + json.loads + dict, in memory",
        ),
        (
            "pipeline cold",
            f"{cold['wall_s']:.2f} s, {n / cold['wall_s']:,.0f} ev/s",
            "new process: Python start, SparkSession, all batches, exit",
        ),
        (
            "  ratio to baseline wall",
            f"{cold['wall_s'] / base['wall_s']:.2f} x",
            "cold wall / baseline wall",
        ),
        (
            "pipeline excl. session start",
            f"{cold['excl_start_s']:.2f} s, {n / cold['excl_start_s']:,.0f} ev/s",
            "same run, from query start to caught up (first-batch worker start included)",
        ),
        (
            "first pass, warm session",
            f"{steady['first_run_s']:.2f} s, {n / steady['first_run_s']:,.0f} ev/s",
            f"in-process, SparkSession already started ({steady['session_start_s']:.1f} s), "
            "JVM not yet compiled",
        ),
        (
            "steady state",
            f"{steady['events_per_s']:,.0f} ev/s, {steady['batch_s_median']:.2f} s/batch",
            f"{steady['batches']} batches of {steady['batch_events']:,} after two warm-up passes"
            f" and the first batch; median batch, {steady['between_batches_s']:.2f} s between",
        ),
        (
            "  ratio to baseline ev/s",
            f"{steady['events_per_s'] / base['events_per_s']:.2f} x",
            "steady-state ev/s / baseline ev/s",
        ),
        (
            "latency p50 / p95 / p99",
            f"{lat['p50_s']:.3f} / {lat['p95_s']:.3f} / {lat['p99_s']:.3f} s",
            f"{lat['events_measured']:,} events at {lat['rate']:,}/s "
            f"over {lat['duration_s']:.0f} s after {lat.get('warmup_s', 5):.0f} s of warm-up;"
            f" CreateTime to commit seen in the Delta log (trigger {lat['trigger_interval']})",
        ),
        (
            "  of which the broker",
            f"{lat.get('ack_p50_s', 0):.3f} / {lat.get('ack_p95_s', 0):.3f} s",
            "p50 / p95 CreateTime to the producer's delivery report (acks=all); commits every "
            f"{lat.get('commit_interval_s_median') or 0:.2f} s (median)",
        ),
        (
            "  waiting / running",
            f"{lat.get('wait_p50_s') or 0:.2f} / {lat.get('run_p50_s') or 0:.2f} s",
            "p50 CreateTime to the planning of the micro-batch that reads the record (offset log"
            " entry written), and planning to that batch's commit seen (p95 "
            f"{lat.get('wait_p95_s') or 0:.2f} / {lat.get('run_p95_s') or 0:.2f} s)",
        ),
        (
            "rebuild",
            f"{reb['wall_s']:.2f} s, {reb['events'] / reb['wall_s']:,.0f} ev/s",
            f"{reb['events']:,} events from offset 0, new process incl. start-up "
            f"({reb['excl_start_s']:.1f} s excl. session start)",
        ),
        (
            "peak memory",
            f"{r['peak_rss_bytes'] / mb:,.0f} MiB",
            "max RSS sum of the job's process tree (driver, JVM, workers) in cold, latency, "
            "rebuild",
        ),
        ("correct", "yes" if r["correct"] else "NO", "every table equals the reference"),
    ]


def render(r: dict[str, Any]) -> str:
    table = rows(r)
    width = max(len(m) for m, _, _ in table)
    vwidth = max(len(v) for _, v, _ in table)
    lines = [f"{m:<{width}}  {v:<{vwidth}}  {w}" for m, v, w in table]
    lines.append("")
    lines.append("targets:")
    lines.extend(t.line() for t in targets(r))
    if not r["correct"]:
        lines.append("  FAIL  correctness: a table differs from the reference (see JSON)")
    return "\n".join(lines)


def passed(r: dict[str, Any]) -> bool:
    return r["correct"] and all(t.passed for t in targets(r) if t.applies)


def write_json(r: dict[str, Any], directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    results = {
        **r,
        "targets": [
            {
                "name": t.name,
                "measured": t.measured,
                "limit": t.limit,
                "applies": t.applies,
                "passed": t.passed,
            }
            for t in targets(r)
        ],
    }
    stamp = r["started_at"].replace(":", "").replace("-", "")
    path = directory / f"perf-{stamp}.json"
    text = json.dumps(results, indent=2, default=str)
    path.write_text(text)
    (directory / "perf-latest.json").write_text(text)
    return path
