"""The peers benchmark's summary: medians per engine and workload, ratios against each peer,
the issue's targets, the machine and its load; printed as a table and written as JSON."""

from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

GB = 1024**3


def machine() -> dict[str, Any]:
    """What the figures were taken on."""
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = int(line.split()[1]) * 1024
    except OSError:
        pass
    java = ""
    if shutil.which("java"):
        done = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False)
        java = (done.stderr.splitlines() or [""])[0]
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gb": round(memory / GB, 1),
        "python": sys.version.split()[0],
        "java": java,
        "os": platform.platform(),
    }


def median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def summarize(results: dict[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    """Per workload and engine: medians over the runs whose output was right."""
    summary: dict[str, dict[str, dict[str, Any]]] = {}
    for workload, engines in results["workloads"].items():
        for engine, runs in engines.items():
            cold = [r for r in runs.get("cold", []) if r["verdict"]["same"]]
            rate = [r for r in runs.get("rate", []) if r["verdict"]["same"]]
            all_runs = runs.get("cold", []) + runs.get("rate", [])
            summary.setdefault(workload, {})[engine] = {
                "correct": all(r["verdict"]["same"] for r in all_runs),
                "runs": len(all_runs),
                "wrong_runs": sum(not r["verdict"]["same"] for r in all_runs),
                "cold_wall_s": median([r["wall_s"] for r in cold]),
                "steady_events_per_s": median([r["steady_events_per_s"] for r in cold]),
                "p50_s": median([r["p50_s"] for r in rate]),
                "p95_s": median([r["p95_s"] for r in rate]),
                "peak_rss_bytes": median([r["peak_rss_bytes"] for r in cold + rate]),
                "peak_rss_max_bytes": max((r["peak_rss_bytes"] for r in all_runs), default=None),
                "load_1min": _span([r["load_before"][0] for r in all_runs]),
            }
    return summary


def ratios(summary: dict[str, dict[str, dict[str, Any]]]) -> dict[str, dict[str, dict]]:
    """The platform against each peer: how many times faster cold (peer wall / platform wall),
    in steady state (platform events/s / peer's), at p95 (peer p95 / platform p95; above 1 the
    platform is faster), and its memory against the peer's (platform RSS / peer RSS)."""
    out: dict[str, dict[str, dict]] = {}
    for workload, engines in summary.items():
        mine = engines.get("platform")
        if mine is None:
            continue
        for peer, theirs in engines.items():
            if peer == "platform":
                continue
            out.setdefault(workload, {})[peer] = {
                "cold_x": ratio(theirs["cold_wall_s"], mine["cold_wall_s"]),
                "steady_x": ratio(mine["steady_events_per_s"], theirs["steady_events_per_s"]),
                "p95_x": ratio(theirs["p95_s"], mine["p95_s"]),
                "rss_x": ratio(mine["peak_rss_bytes"], theirs["peak_rss_bytes"]),
            }
    return out


def _span(values: list[float]) -> list[float] | None:
    """The lowest and highest of ``values`` (the machine's load over an engine's runs)."""
    return [min(values), max(values)] if values else None


def ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b == 0 else a / b


def targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's targets: each with its value and PASS/FAIL (None: not measured)."""
    summary, rated = results["summary"], results["ratios"]
    found = []
    for workload, peers in rated.items():
        if "quix" in peers:
            value = peers["quix"]["cold_x"]
            found.append(_target(f"{workload}: cold >= 1.5x faster than Quix", value, 1.5))
        if workload in ("fraud", "spend") and "kafka-streams" in peers:
            value = peers["kafka-streams"]["steady_x"]
            found.append(_target(f"{workload}: steady >= 1.0x Kafka Streams", value, 1.0))
    for workload, engines in summary.items():
        mine = engines.get("platform")
        if mine is None:
            continue
        rss = mine["peak_rss_max_bytes"]
        value = None if rss is None else 1.5 * GB / rss
        found.append({**_target(f"{workload}: peak RSS <= 1.5 GB", value, 1.0), "shown": _gb(rss)})
        if results["args"]["rate"] == 5000 and mine["p95_s"] is not None:
            p95 = mine["p95_s"]
            value = None if p95 is None else 1.0 / p95
            found.append(
                {**_target(f"{workload}: p95 <= 1 s at 5,000/s", value, 1.0), "shown": p95}
            )
    return found


def _target(name: str, value: float | None, least: float) -> dict[str, Any]:
    verdict = None if value is None else value >= least
    return {"target": name, "value": value, "pass": verdict, "shown": value}


def _gb(value: float | None) -> str:
    return "-" if value is None else f"{value / GB:.2f}"


def num(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def render(results: dict[str, Any]) -> str:
    m, args = results["machine"], results["args"]
    lines = [
        f"peers on {m['date']}: {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB, "
        f"Python {m['python']}, {m['java']}",
        f"load average (1/5/15 min) at start {_load(results['load_start'])}, "
        f"at end {_load(results['load_end'])}; per run {_load_range(results)} (the column "
        "load: before an engine's runs, lowest-highest)",
        f"{args['events']:,} records per workload, {args['keys']:,} keys; medians of "
        f"{args['repeats']} (latency: {args.get('rate_repeats') or args['repeats']}); "
        f"fixed rate {args['rate']:,}/s for {args['latency_seconds']:g} s "
        f"after {args['warmup_seconds']:g} s of warm-up "
        f"({args.get('latency_workloads') or args['workloads']}); commit interval "
        f"(Kafka Streams, Quix) {args['commit_interval_ms']} ms; "
        f"Kafka Streams threads {args['ks_threads']}",
        "",
        f"{'workload':9}{'engine':15}{'output':>8}{'cold s':>9}{'steady ev/s':>13}"
        f"{'p50 s':>8}{'p95 s':>8}{'RSS GB':>8}  load",
    ]
    for workload, engines in results["summary"].items():
        for engine, s in engines.items():
            right = "right" if s["correct"] else f"WRONG {s['wrong_runs']}/{s['runs']}"
            lines.append(
                f"{workload:9}{engine:15}{right:>8}{num(s['cold_wall_s'], '.1f'):>9}"
                f"{num(s['steady_events_per_s'], ',.0f'):>13}{num(s['p50_s'], '.2f'):>8}"
                f"{num(s['p95_s'], '.2f'):>8}{_gb(s['peak_rss_bytes']):>8}  "
                f"{_load_span(s.get('load_1min'))}"
            )
    for engine, missing in results.get("not_run", {}).items():
        lines.append(f"not run: {engine} on {', '.join(missing['workloads'])}: {missing['why']}")
    lines += [
        "",
        "the platform against each peer (cold: peer wall / platform wall; steady: platform ev/s "
        "/ peer ev/s; p95: peer p95 / platform p95; above 1 the platform is faster. RSS: "
        "platform / peer)",
        f"{'workload':9}{'peer':15}{'cold x':>8}{'steady x':>10}{'p95 x':>8}{'RSS x':>8}",
    ]
    for workload, peers in results["ratios"].items():
        for peer, r in peers.items():
            lines.append(
                f"{workload:9}{peer:15}{num(r['cold_x'], '.2f'):>8}"
                f"{num(r['steady_x'], '.2f'):>10}{num(r['p95_x'], '.2f'):>8}"
                f"{num(r['rss_x'], '.2f'):>8}"
            )
    if results.get("semantics"):
        lines += ["", *render_semantics(results["semantics"])]
    lines += ["", "targets (the platform):"]
    for t in results["targets"]:
        verdict = {True: "PASS", False: "FAIL", None: "n/a"}[t["pass"]]
        shown = t["shown"]
        text = shown if isinstance(shown, str) else num(shown, ".2f")
        lines.append(f"  {verdict:4}  {t['target']} ({text})")
    return "\n".join(lines)


def render_semantics(found: dict[str, Any]) -> list[str]:
    """One line per workload and engine: its output on disordered data against the exact
    answer (5% of records out of order within grace, 0.5% late)."""
    lines = [
        "disordered data (5% out of order within grace, 0.5% late) against the exact answer",
        f"{'workload':9}{'engine':22}{'rows':>9}{'differ':>8}{'missing':>8}{'extra':>7}  late",
    ]
    for workload, data in found.items():
        for engine, outcome in data["runs"].items():
            v = outcome["verdict"]
            late = outcome.get("dead_lettered_late")
            if late is not None:
                same = "same records" if late["same"] else "OTHER records"
                note = f"{late['dead_lettered']:,} dead-lettered ({same}, {data['late']:,} late)"
            else:
                note = "dropped or applied by the engine's own rule"
            lines.append(
                f"{workload:9}{engine:22}{v['rows']:>9,}{v['differ']:>8,}{v['missing']:>8,}"
                f"{v['extra']:>7,}  {note}"
            )
    return lines


def _load(values: Any) -> str:
    return "/".join(f"{v:.2f}" for v in values)


def _load_span(span: list[float] | None) -> str:
    return "-" if span is None else f"{span[0]:.1f}-{span[1]:.1f}"


def _load_range(results: dict[str, Any]) -> str:
    ones = [
        r[when][0]
        for engines in results["workloads"].values()
        for runs in engines.values()
        for kind in ("cold", "rate")
        for r in runs.get(kind, [])
        for when in ("load_before", "load_after")
    ]
    return f"{min(ones):.2f}-{max(ones):.2f} (1 min)" if ones else "-"


def write_json(results: dict[str, Any], folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"peers-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(results, indent=2, default=str))
    return path
