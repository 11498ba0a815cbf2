"""The whole demo live at once on one engine (``make bench-platform``).

From `kappa up` (what `make run` runs) on a private home: every demo pipeline plus a second
version of ``transactions_enriched`` is deployed through Dagster at once, while the demo
producer writes 200 events/s. The benchmark prints, per deployment, the time from the first
launch to its first commit and its lag (p50, p95) over a steady window, which starts once the
quality suites the start launches have run; for the platform, the load average, the summed RSS
of every process of the home, the first commit of one more deployment launched into the running
engine, the tables checked against their reference, how long Ctrl-C takes and what it leaves,
and how long the next `kappa up` takes to bring every deployment back. Results go to
``bench/results/platform-<time>.json``.

    python -m bench.platform_load [--steady-s 180] [--rate 200] [--no-run-host]
        [--set spark.master=local[4]] ...
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import Any

from bench.platform_processes import by_role, cpu_by_role, members
from bench.platform_references import check_table
from bench.table_freshness import LogEnds, TableCommits, summary
from kappa.dagster_api import DagsterApi
from kappa.deploy import deploy
from kappa.platform_up import dagster_ready
from kappa.ports import free_port
from streaming.dagster_names import quality_job_name
from streaming.define.registry import get_pipeline, pipeline_names
from streaming.deployment import Deployment
from streaming.kafka.log import KafkaLog
from streaming.processes import ManagedProcess
from streaming.settings import REPO_ROOT, Settings, load_settings
from streaming.wait import wait_until

GB = 1024**3
EXTRA = ("transactions_enriched", "v2")  # the side-by-side version of the scenario
ONE_MORE = ("customers", "v2")  # launched into the running engine once all others commit


def bench_settings(home: Path, **more: Any) -> Settings:
    """The platform's own settings (kappa.yaml), on a private home and free ports; ``more``:
    further overrides."""
    return load_settings(
        env={},
        overrides={
            "home": str(home),
            "broker.port": free_port(),
            "broker.controller_port": free_port(),
            "dagster.port": free_port(),
            "kafka.bootstrap_servers": "",  # the embedded broker's address
            **more,
        },
    )


def kappa_up(settings: Settings, rate: float, log: Path) -> ManagedProcess:
    argv = [sys.executable, "-m", "kappa.cli", "up", "--rate", str(rate)]
    env = {**os.environ, **settings.to_env()}
    return ManagedProcess("kappa-up", argv, log, env=env, cwd=REPO_ROOT).start()


class Platform:
    """The tables of a set of deployments, the log they read, and samples of both."""

    def __init__(self, settings: Settings, deployments: list[tuple[str, str]]) -> None:
        self.settings = settings
        self.tables: dict[tuple[str, str], TableCommits] = {}
        self.inputs: dict[tuple[str, str], list[str]] = {}
        for d in deployments:
            self.add(d)
        topics = sorted({t for ts in self.inputs.values() for t in ts})
        self._kafka = KafkaLog(settings.kafka.client_config())
        self.log = LogEnds(self._kafka.latest, topics)
        self.lags: dict[tuple[str, str], list[float]] = {d: [] for d in deployments}
        self.loads: list[float] = []
        self.rss: list[int] = []

    def add(self, deployment: tuple[str, str]) -> None:
        name, version = deployment
        path = Deployment(name, version, self.settings.home).table_path
        self.tables[deployment] = TableCommits(path)
        self.inputs[deployment] = list(get_pipeline(self.settings.pipelines, name).topics)

    def poll(self) -> None:
        now = time.time()
        for table in self.tables.values():
            table.poll(now)

    def sample(self, with_rss: bool) -> None:
        now = time.time()
        self.log.sample(now)
        self.poll()
        for d, lags in self.lags.items():
            lag = self.log.lag_s(self.tables[d].latest, self.inputs[d], now)
            if lag is not None:
                lags.append(lag)
        self.loads.append(os.getloadavg()[0])
        if with_rss:
            self.rss.append(sum(m.rss for m in members(str(self.settings.home))))

    def close(self) -> None:
        self._kafka.close()

    def committed_since(self, since: float) -> dict[tuple[str, str], float | None]:
        self.poll()
        return {d: t.first_seen_after(since) for d, t in self.tables.items()}


def launch_all(platform: Platform, deployments: list[tuple[str, str]]) -> float:
    """Deploy one after another, as a user does; the tables are read between the launches, so
    a table that commits before the last launch is seen then."""
    started = time.time()
    for name, version in deployments:
        deploy(platform.settings, name, version, "continuous")
        platform.log.sample(time.time())
        platform.poll()
    return started


def wait_first_commits(
    platform: Platform, since: float, timeout_s: float
) -> dict[tuple[str, str], float | None]:
    def all_committed() -> bool:
        platform.log.sample(time.time())  # the log's history, for the lags measured later
        return all(t is not None for t in platform.committed_since(since).values())

    wait_until(
        all_committed,
        timeout_s,
        interval_s=1.0,
    )
    return {d: (t - since if t else None) for d, t in platform.committed_since(since).items()}


def wait_start_up_suites(
    settings: Settings, api: DagsterApi, deployments: list[tuple[str, str]], timeout_s: float
) -> bool:
    """Wait for the quality suites the start launches, one per deployment once it commits: they
    run in the engine beside the deployments, so the steady window starts after them."""
    if not settings.quality.auto:
        return True

    suites = {quality_job_name(n) for n, _ in deployments}

    def done() -> bool:
        home = settings.home
        if not all(Deployment(n, v, home).validation_path.exists() for n, v in deployments):
            return False
        return not any(r.job_name in suites for r in api.active_runs())

    return wait_until(done, timeout_s, interval_s=2.0)


def ctrl_c(up: ManagedProcess, home: str) -> tuple[float, list[str]]:
    started = time.monotonic()
    assert up.proc is not None
    os.kill(up.proc.pid, signal.SIGINT)
    up.proc.wait(timeout=300)
    took = time.monotonic() - started
    wait_until(lambda: not members(home), 10.0)
    return took, [f"{m.role}:{m.pid}" for m in members(home)]


def run_settings(args: argparse.Namespace) -> Settings:
    """The run's settings: the options' and every ``--set`` on the benchmark's home. A bad name
    or value fails here, before the home is emptied."""
    overrides = {"dagster.run_host": args.run_host, "quality.auto": args.quality}
    return bench_settings(Path(args.home), **overrides, **dict(args.set))


def run(args: argparse.Namespace) -> dict[str, Any]:
    settings = run_settings(args)
    home = Path(args.home)
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    names = pipeline_names(settings.pipelines)
    deployments = [(n, get_pipeline(settings.pipelines, n).version) for n in names] + [EXTRA]
    result: dict[str, Any] = {"deployments": [f"{n} {v}" for n, v in deployments]}
    result["run_host"] = args.run_host
    result["quality_auto"] = args.quality
    result["settings_set"] = dict(args.set)
    result["load_before"] = os.getloadavg()[0]
    up = kappa_up(settings, args.rate, home / "kappa-up-1.log")
    api = DagsterApi(settings, timeout_s=5)
    assert wait_until(lambda: dagster_ready(api), 240, 1.0), "Dagster did not start"
    platform = Platform(settings, deployments)
    try:
        first = launch_all(platform, deployments)
        result["launch_s"] = time.time() - first
        firsts = wait_first_commits(platform, first, args.first_commit_timeout_s)
        result["first_commit_s"] = {f"{n} {v}": s for (n, v), s in firsts.items()}
        platform.add(ONE_MORE)
        more_at = time.time()
        deploy(settings, *ONE_MORE, "continuous")
        platform.lags[ONE_MORE] = []
        more = wait_first_commits(platform, more_at, 120)[ONE_MORE]
        result["one_more_first_commit_s"] = more
        settled = wait_start_up_suites(
            settings, api, [*deployments, ONE_MORE], args.first_commit_timeout_s
        )
        result["suites_done_s"] = time.time() - first if settled else None
        cpu_before, steady_from = members(str(home)), time.monotonic()
        end = time.time() + args.steady_s
        tick = 0
        while time.time() < end:
            platform.sample(with_rss=tick % 5 == 0)
            tick += 1
            time.sleep(1.0)
        result["lag"] = {f"{n} {v}": summary(lags) for (n, v), lags in platform.lags.items()}
        result["load_1m"] = {
            "mean": sum(platform.loads) / len(platform.loads),
            "max": max(platform.loads),
        }
        spent = cpu_by_role(cpu_before, members(str(home)))
        steady_s = time.monotonic() - steady_from
        # Cores busy per role over the window (a process that ended meanwhile is not counted).
        result["cores_busy"] = {role: cpu / steady_s for role, cpu in spent.items()}
        now = members(str(home))
        result["rss_gb"] = {
            "max": max(platform.rss) / GB,
            "by_role": {k: v / GB for k, v in by_role(now, "rss").items()},
            "processes": len(now),
            "largest": [
                (m.role, m.command, m.rss / GB) for m in sorted(now, key=lambda m: -m.rss)[:8]
            ],
        }
        result["tables"] = {f"{n} {v}": check_table(settings, n, v) for n, v in platform.tables}
    finally:
        result["stop_s"], result["left_after_stop"] = ctrl_c(up, str(home))
    restarted = time.time()
    up = kappa_up(settings, args.rate, home / "kappa-up-2.log")
    try:
        back = wait_first_commits(platform, restarted, args.first_commit_timeout_s)
        result["resumed"] = sum(1 for s in back.values() if s is not None)
        result["resume_s"] = max((s for s in back.values() if s is not None), default=None)
    finally:
        result["second_stop_s"], result["left_after_second_stop"] = ctrl_c(up, str(home))
    platform.close()
    return result


def report(result: dict[str, Any]) -> str:
    lines = [f"{'deployment':<28} {'first commit s':>14} {'lag p50 s':>9} {'lag p95 s':>9}  table"]
    for d in result["deployments"] + [" ".join(ONE_MORE)]:
        first = result["first_commit_s"].get(d, result.get("one_more_first_commit_s"))
        lag = result.get("lag", {}).get(d, {})
        lines.append(
            f"{d:<28} {_num(first):>14} {_num(lag.get('p50_s')):>9} {_num(lag.get('p95_s')):>9}"
            f"  {result.get('tables', {}).get(d, '')}"
        )
    firsts = [s for s in result["first_commit_s"].values() if s is not None]
    hosted = "threads of one run host" if result.get("run_host", True) else "a process each"
    lines += [
        "",
        f"deployments' Dagster runs: {hosted}; quality suites by themselves: "
        f"{'on' if result.get('quality_auto', True) else 'off'}",
        "settings set: "
        + (", ".join(f"{k}={v}" for k, v in result.get("settings_set", {}).items()) or "none"),
        f"deployments committing: {len(firsts)}/{len(result['deployments'])}, the last "
        f"{_num(max(firsts, default=None))} s after the first launch (target <= 180); the "
        f"{len(result['deployments'])} launches took {_num(result.get('launch_s'))} s",
        f"one more deployment: first commit in {_num(result.get('one_more_first_commit_s'))} s "
        "(target <= 15)",
        f"start-up quality suites done {_num(result.get('suites_done_s'))} s after the first "
        "launch; the steady window follows",
        f"lag p95, worst table: {_num(_worst_p95(result))} s (target <= 5)",
        f"load average (1 min) over the steady window: mean {_num(result['load_1m']['mean'])}, "
        f"max {_num(result['load_1m']['max'])} (target <= 4); before: "
        f"{_num(result['load_before'])}",
        f"summed RSS of the platform: max {_num(result['rss_gb']['max'])} GB (target <= 8); "
        + ", ".join(f"{k} {v:.2f}" for k, v in sorted(result["rss_gb"]["by_role"].items())),
        f"processes: {result['rss_gb']['processes']}; the largest: "
        + "; ".join(f"{c} ({r}) {g:.2f}" for r, c, g in result["rss_gb"]["largest"]),
        "cores busy over the steady window: "
        + ", ".join(f"{k} {v:.2f}" for k, v in sorted(result["cores_busy"].items())),
        f"Ctrl-C: stopped in {_num(result['stop_s'])} s (target <= 60), left "
        f"{result['left_after_stop'] or 'nothing'}",
        f"next start: {result.get('resumed')} deployments committing again, the last after "
        f"{_num(result.get('resume_s'))} s; its Ctrl-C took {_num(result.get('second_stop_s'))} s,"
        f" left {result.get('left_after_second_stop') or 'nothing'}",
    ]
    return "\n".join(lines)


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _worst_p95(result: dict[str, Any]) -> float | None:
    values = [v["p95_s"] for v in result.get("lag", {}).values() if v["samples"]]
    return max(values, default=None)


def _setting(item: str) -> tuple[str, str]:
    name, sep, value = item.partition("=")
    if not sep or not name:
        raise SystemExit(f"--set {item!r}: give NAME=VALUE, e.g. spark.master=local[4]")
    return name, value


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", default="/tmp/kappa-bench-platform")
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--steady-s", type=float, default=180.0)
    parser.add_argument("--first-commit-timeout-s", type=float, default=600.0)
    # The baseline: every deployment's run in a process of its own (dagster.run_host false).
    parser.add_argument("--no-run-host", dest="run_host", action="store_false")
    # What the quality sensor's suites cost the deployments: none run by themselves.
    parser.add_argument("--no-quality", dest="quality", action="store_false")
    # An A/B of a setting: a dotted name of kappa.yaml and its value, repeatable.
    parser.add_argument("--set", action="append", default=[], type=_setting, metavar="NAME=VALUE")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    result = run(args)
    result["measured_at"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    result["cpus"] = os.cpu_count()
    out = REPO_ROOT / "bench" / "results" / f"platform-{int(time.time())}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, default=str))
    print(report(result))
    print(f"\nresults: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
