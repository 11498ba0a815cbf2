"""Where the platform's cold run spends its time: a timeline and the CPU of each process role.

    python -m bench.peers.profile --workload latest --events 1000000 [--py-spy]
    python -m bench.peers.profile --workload fraud --runs 3 \\
        --variant default: --variant 'no-archive:KAPPA_JVM_ARCHIVE=off'

One embedded broker, one backlog (as ``make bench-peers`` writes it), cold runs of the platform:
``--runs`` per variant, the variants alternating (A B B A ...), each with its own environment
(``--variant``), so a setting's effect is measured in one session. For each run it prints:

- the timeline from the process start: the Spark JVM started, the query started (its
  checkpoint's metadata), each micro-batch planned (``offsets/N``) and visible (its Delta
  commit), the output complete; and the Python worker processes Spark started;
- CPU seconds per role: the driver's Python, the Spark JVM, Spark's Python workers, sampled
  every 0.2 s (a process's last sample counts once it has exited);
- peak RSS per role (the same samples), and the processes at the tree's peak: Spark's Python
  processes by what they are (a worker daemon, a worker it forked, or the module Spark started),
  with each one's RSS and their PSS (a forked worker's RSS counts the pages it shares with its
  daemon; PSS divides them among the sharers);
- with ``--py-spy``: the driver's and workers' Python, sampled by py-spy (``py-spy record``
  around the run), as the functions with the most samples (own and with callees);
- with ``--event-log``: Spark's own timings from its event log, per stage (one per micro-batch):
  when it started, its wall time, its tasks' time and, of that, the JVM's CPU and GC (the rest
  of a task's time is mostly waiting on its Python worker).

The output is checked against the reference, as in the benchmark. At the end: medians per variant
(wall, first table commit, CPU, peak RSS of the tree and its PSS at that peak).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import statistics
import sys
import threading
from pathlib import Path
from typing import Any

import psutil

from bench.peers.backlog import private_broker, write_workload_backlog
from bench.peers.engines import Platform, RunSpec
from bench.peers.outputs import compare
from bench.peers.producing import delete_topics
from bench.peers.runs import EngineProcess, until_complete, work_dir

GB = 1024**3


class RoleSampler(threading.Thread):
    """CPU seconds and peak RSS per role of a process tree, sampled every ``interval_s``."""

    def __init__(self, pid: int, interval_s: float = 0.2) -> None:
        super().__init__(daemon=True)
        self.root = psutil.Process(pid)
        self.interval_s = interval_s
        self.cpu: dict[int, tuple[str, float]] = {}
        self.peak: dict[str, int] = collections.defaultdict(int)
        self.peak_total = 0
        self.started: dict[int, tuple[str, float]] = {}
        self.java: set[int] = set()
        # At the sample with the tree's highest RSS: (role or Python kind, RSS, PSS) per process.
        # A forked worker shares its daemon's pages, which RSS counts in both; PSS splits them.
        self.at_peak: list[tuple[str, int, int]] = []
        self._stop_event = threading.Event()

    def role(self, proc: psutil.Process) -> str:
        if proc.pid == self.root.pid:
            return "driver python"
        name = proc.name()
        if "java" in name:
            return "spark jvm"
        return "python workers" if "python" in name or "worker" in name else name

    def kind(self, proc: psutil.Process) -> str:
        """What a Python process of Spark's is: the worker daemon, a worker it forked, or the
        module Spark started it with (a data source's planner, a streaming source's runner)."""
        argv = proc.cmdline()
        module = argv[argv.index("-m") + 1] if "-m" in argv[:-1] else proc.name()
        if module != "pyspark.daemon":
            return module
        served = argv[-1]  # the worker module the daemon forks processes for
        forked = proc.ppid() not in self.java
        return f"{served} (forked)" if forked else f"daemon of {served}"

    def run(self) -> None:
        while not self._stop_event.is_set():
            try:
                tree = [self.root, *self.root.children(recursive=True)]
            except psutil.Error:
                return
            rss: dict[str, int] = collections.defaultdict(int)
            processes: list[tuple[str, int, int]] = []
            for proc in tree:
                try:
                    role = self.role(proc)
                    times = proc.cpu_times()
                    memory = proc.memory_full_info()
                    if role == "spark jvm":
                        self.java.add(proc.pid)
                    what = self.kind(proc) if role == "python workers" else role
                    self.started.setdefault(proc.pid, (role, proc.create_time()))
                except psutil.Error:
                    continue
                self.cpu[proc.pid] = (role, times.user + times.system)
                rss[role] += memory.rss
                processes.append((what, memory.rss, memory.pss))
            for role, value in rss.items():
                self.peak[role] = max(self.peak[role], value)
            if sum(rss.values()) > self.peak_total:
                self.peak_total = sum(rss.values())
                self.at_peak = processes
            self._stop_event.wait(self.interval_s)

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=5)

    def cpu_by_role(self) -> dict[str, float]:
        totals: dict[str, float] = collections.defaultdict(float)
        for role, seconds in self.cpu.values():
            totals[role] += seconds
        return dict(totals)


def timeline(spec: RunSpec, platform: Platform, sampler: RoleSampler, probe: Any) -> list:
    """(seconds from the process start, what happened), in order."""
    from streaming.deployment import Deployment

    t0 = sampler.root.create_time()
    events: list[tuple[float, str]] = []
    for role, created in sampler.started.values():
        if role != "driver python":
            events.append((created - t0, f"{role} process started"))
    deployment = Deployment(spec.workload.pipeline, platform.version(spec), platform.home(spec))
    checkpoint = deployment.checkpoint_path
    if (checkpoint / "metadata").exists():
        events.append(((checkpoint / "metadata").stat().st_mtime - t0, "query started"))
    for folder, what in (("offsets", "planned"), ("commits", "checkpoint commit")):
        for entry in (checkpoint / folder).glob("[0-9]*"):
            events.append((entry.stat().st_mtime - t0, f"batch {entry.name} {what}"))
    for at, position, _ in probe.seen:
        events.append((at - t0, f"table commit covering {sum(position.values()):,} records"))
    return sorted(events)


def top_frames(raw: Path, limit: int = 25) -> list[str]:
    """The functions with the most py-spy samples (own, and with their callees)."""
    own: collections.Counter[str] = collections.Counter()
    total: collections.Counter[str] = collections.Counter()
    samples = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        frames = stack.split(";")
        n = int(count)
        samples += n
        own[frames[-1]] += n
        for frame in set(frames):
            total[frame] += n
    lines = [f"{samples:,} samples; own (with callees): function"]
    for frame, n in own.most_common(limit):
        lines.append(f"  {n / samples:6.1%} ({total[frame] / samples:6.1%})  {frame[:150]}")
    lines.append("most samples with callees:")
    for frame, n in total.most_common(limit):
        lines.append(f"  {n / samples:6.1%}  {frame[:150]}")
    return lines


def with_event_log(env: dict[str, str], folder: Path) -> dict[str, str]:
    """``env`` with Spark writing its event log, one uncompressed JSON file, into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    conf = json.loads(env.get("KAPPA_SPARK_CONF", "{}"))
    conf.update(
        {
            "spark.eventLog.enabled": "true",
            "spark.eventLog.dir": folder.as_uri(),
            "spark.eventLog.compress": "false",
            "spark.eventLog.rolling.enabled": "false",
        }
    )
    return {**env, "KAPPA_SPARK_CONF": json.dumps(conf)}


def stage_times(folder: Path, process_start: float) -> list[str]:
    """Per stage of the event log in ``folder``: start (from the process start), wall, tasks'
    time, their JVM CPU and GC, in seconds."""
    stages: dict[int, dict[str, Any]] = {}
    for path in folder.iterdir():
        for line in path.read_text().splitlines():
            event = json.loads(line)
            kind = event["Event"]
            if kind == "SparkListenerStageCompleted":
                info = event["Stage Info"]
                stage = stages.setdefault(info["Stage ID"], collections.Counter())
                stage["start"] = info["Submission Time"] / 1000 - process_start
                stage["wall"] = (info["Completion Time"] - info["Submission Time"]) / 1000
            elif kind == "SparkListenerTaskEnd":
                metrics = event.get("Task Metrics") or {}
                stage = stages.setdefault(event["Stage ID"], collections.Counter())
                stage["tasks"] += 1
                stage["run"] += metrics.get("Executor Run Time", 0) / 1000
                stage["cpu"] += metrics.get("Executor CPU Time", 0) / 1e9
                stage["gc"] += metrics.get("JVM GC Time", 0) / 1000
    return [
        f"stage {n}: at {s['start']:.1f} s, wall {s['wall']:.2f} s, {s['tasks']} tasks "
        f"{s['run']:.2f} s, of which JVM CPU {s['cpu']:.2f} s, GC {s['gc']:.2f} s"
        for n, s in sorted(stages.items())
    ]


def profile_run(
    platform: Platform,
    spec: RunSpec,
    written: Any,
    expected: dict,
    py_spy: bool,
    event_log: bool = False,
) -> dict[str, Any]:
    events = spec.work / "event-log"
    if event_log:
        env = platform.options.get("platform_env", {})
        platform.options["platform_env"] = with_event_log(env, events)
    process = EngineProcess(platform, spec)
    raw = spec.work / "py-spy.txt"
    if py_spy:
        beside = Path(sys.executable).parent / "py-spy"
        spy = str(beside) if beside.exists() else shutil.which("py-spy")
        if spy is None:
            raise SystemExit("py-spy is not installed (pip install py-spy)")
        process.launch.argv[:0] = [spy, "record", "-r", "50", "-s", "-f", "raw", "-o", str(raw)]
        process.launch.argv.insert(process.launch.argv.index("-o") + 2, "--")
    ends = {w: e for w, e in written.ends.items() if w[0] in spec.workload.topics}
    probe = platform.probe(spec)
    probe.start()
    process.start()
    assert process.proc is not None
    sampler = RoleSampler(process.proc.pid)
    sampler.start()
    try:
        done_at = until_complete(probe, process, ends, 0, "processing the backlog")
        if py_spy:  # py-spy writes its profile when the program it runs exits
            process.proc.wait(timeout=120)
    finally:
        sampler.stop()
        process.stop()
        probe.stop()
    verdict = compare(platform.output(spec), expected)
    return {
        "wall_s": done_at - process.started_at,
        "timeline": timeline(spec, platform, sampler, probe),
        "cpu": sampler.cpu_by_role(),
        "peak_rss": dict(sampler.peak),
        "peak_rss_total": sampler.peak_total,
        "at_peak": sampler.at_peak,
        "verdict": verdict.line(),
        "py_spy": top_frames(raw) if py_spy and raw.exists() else [],
        "stages": stage_times(events, sampler.root.create_time()) if event_log else [],
    }


def parse_variant(text: str) -> tuple[str, dict[str, str]]:
    """``LABEL:NAME=VALUE;NAME=VALUE`` (a JSON value may hold ``:`` and ``,``, not ``;``).
    ``CODE=/path`` runs the platform from another checkout (an A/B of a code change)."""
    label, _, pairs = text.partition(":")
    env = dict(pair.split("=", 1) for pair in pairs.split(";") if pair)
    return label, env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.peers.profile", description=__doc__)
    parser.add_argument("--workload", default="latest")
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=1, help="runs per variant, alternating")
    parser.add_argument("--py-spy", action="store_true")
    parser.add_argument("--event-log", action="store_true", help="Spark's timings per stage")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (logs)")
    parser.add_argument("--quiet", action="store_true", help="no timeline per run")
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="LABEL:NAME=VALUE;...",
        help="platform environment of a variant (repeatable; default: one, unchanged), e.g. "
        "'no-archive:KAPPA_JVM_ARCHIVE=off'",
    )
    args = parser.parse_args(argv)
    variants = [parse_variant(v) for v in args.variant] or [("default", {})]
    found: dict[str, list[dict[str, Any]]] = {label: [] for label, _ in variants}
    with private_broker("kappa-profile-", keep=args.keep) as (root, settings):
        backlog = write_workload_backlog(settings, args.workload, args.keys, 1, args.events)
        workload = backlog.workload
        print(f"load average {_load()}", flush=True)
        for n in range(args.runs):
            for label, env in variants if n % 2 == 0 else list(reversed(variants)):
                env = dict(env)
                code = {"platform_code": env.pop("CODE")} if "CODE" in env else {}
                platform = Platform(settings, {"platform_env": env, **code})
                run_id = f"profile-{args.workload}-{label}-{n}"
                spec = RunSpec(
                    workload,
                    run_id,
                    work_dir(root, run_id),
                    settings.kafka.bootstrap_servers,
                    False,
                )
                delete_topics(settings, platform.topics_before_run(spec))
                run = profile_run(
                    platform, spec, backlog.written, backlog.expected, args.py_spy, args.event_log
                )
                run["load"] = os.getloadavg()[0]
                found[label].append(run)
                _print_run(label, n, run, args.quiet)
        print(f"\nload average {_load()}")
        print(summary(found))
    return 0


def _load() -> str:
    return "/".join(f"{v:.2f}" for v in os.getloadavg())


def _print_run(label: str, n: int, run: dict[str, Any], quiet: bool) -> None:
    cpu = ", ".join(f"{k} {v:.1f}" for k, v in sorted(run["cpu"].items()) if v >= 0.05)
    rss = ", ".join(f"{k} {v / GB:.2f}" for k, v in sorted(run["peak_rss"].items()) if v)
    print(
        f"\n{label} run {n}: {run['wall_s']:.1f} s, output {run['verdict']}, load "
        f"{run['load']:.2f}\n  CPU s: {cpu}; total {sum(run['cpu'].values()):.1f}\n  peak RSS "
        f"GB: {rss}; tree {run['peak_rss_total'] / GB:.2f}",
        flush=True,
    )
    print(f"  at the peak: {at_peak(run['at_peak'])}")
    if not quiet:
        for at, what in run["timeline"]:
            print(f"  {at:7.2f} s  {what}")
    for line in run["stages"]:
        print(f"  {line}")
    for line in run["py_spy"]:
        print(f"  {line}")


def at_peak(processes: list[tuple[str, int, int]]) -> str:
    """The processes at the tree's peak, grouped: count x RSS each (their PSS in all), in MB."""
    groups: dict[str, list[tuple[int, int]]] = collections.defaultdict(list)
    for what, rss, pss in processes:
        groups[what].append((rss, pss))
    parts = []
    for what, sizes in sorted(groups.items(), key=lambda g: -sum(r for r, _ in g[1])):
        each = "/".join(f"{r / 2**20:.0f}" for r, _ in sorted(sizes, reverse=True))
        pss = sum(p for _, p in sizes) / 2**20
        parts.append(f"{len(sizes)} {what} {each} MB (PSS {pss:.0f})")
    total_pss = sum(p for _, _, p in processes) / GB
    return "; ".join(parts) + f"; tree PSS {total_pss:.2f} GB"


def summary(found: dict[str, list[dict[str, Any]]]) -> str:
    """Medians per variant: wall, first table commit, CPU, peak RSS of the tree (and its PSS at
    that peak)."""
    lines = [
        f"{'variant':24}{'runs':>5}{'wall s':>8}{'1st commit s':>13}{'CPU s':>7}{'RSS GB':>8}"
        f"{'PSS GB':>8}"
    ]
    for label, runs in found.items():
        if not runs:
            continue
        first = [
            next((at for at, what in r["timeline"] if what.startswith("table commit")), None)
            for r in runs
        ]
        lines.append(
            f"{label:24}{len(runs):>5}{statistics.median(r['wall_s'] for r in runs):>8.1f}"
            f"{statistics.median(f for f in first if f is not None):>13.1f}"
            f"{statistics.median(sum(r['cpu'].values()) for r in runs):>7.1f}"
            f"{statistics.median(r['peak_rss_total'] for r in runs) / GB:>8.2f}"
            f"{statistics.median(sum(p for *_, p in r['at_peak']) for r in runs) / GB:>8.2f}"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
