"""The measurements of one benchmark run, each checked against the workload's reference.

- :func:`measure_cold`: a fresh ``python -m streaming run --until-caught-up`` over the backlog;
- :func:`measure_latency`: a continuous deployment, the producer at a fixed rate, produce time
  to the commit that makes the record visible in a table snapshot;
- :func:`measure_rebuild`: a new version rebuilding the whole topic from the earliest offset;
- :func:`measure_steady`: in this process, Spark warm, the backlog in micro-batches of a fixed
  size; time per batch once the first (warm-up) batch is done.
"""

from __future__ import annotations

import itertools
import math
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.processes import CommitWatcher, MeasuredJob, SeenCommit
from bench.workload import TOPIC, Workload
from streaming.delta.table_reader import read_arrow
from streaming.deployment import Deployment, SparkCheckpoint
from streaming.home import Home
from streaming.kafka import offsets as off
from streaming.kafka.log import KafkaLog
from streaming.settings import Settings, load_settings

RUN_TIMEOUT_S = 1800.0
# Every bench deployment reads the log on its own: none follows the live version's commits.
UNALIGNED = ("--no-follow-live",)


@dataclass(frozen=True)
class BenchEnv:
    home: Path
    env: dict[str, str]  # KAPPA_HOME, broker port, bootstrap servers for the streaming jobs
    bootstrap: str
    kafka_client: dict[str, str]

    @classmethod
    def private(cls, prefix: str) -> tuple[BenchEnv, Settings]:
        """A new platform home under the temp directory with free broker ports, and its
        settings: the environment every streaming job of the run gets."""
        from bench.support.settings import free_port

        home = Path(tempfile.mkdtemp(prefix=prefix))
        port = free_port()
        env = {
            "KAPPA_HOME": str(home),
            "KAPPA_BROKER_PORT": str(port),
            "KAPPA_BROKER_CONTROLLER_PORT": str(free_port()),
            "KAFKA_BOOTSTRAP_SERVERS": f"127.0.0.1:{port}",
        }
        settings = load_settings(env=env)
        bench = cls(home, env, settings.kafka.bootstrap_servers, settings.kafka.client_config())
        return bench, settings

    def table_path(self, version: str) -> Path:
        return Deployment("customers", version, self.home).table_path

    def streaming(self, name: str, *args: str) -> MeasuredJob:
        """``python -m streaming run customers ARGS``, logging to ``logs/NAME-001.log``."""
        return MeasuredJob(self.env, [TOPIC, *args], Home(self.home).logs, name)

    def topic_end(self) -> dict[int, int]:
        with KafkaLog(self.kafka_client) as log:
            return log.latest([TOPIC])[TOPIC]


def check_table(path: Path, expected: dict[str, int]) -> dict[str, Any]:
    """The table equals the reference: same keys, one row each, the latest event's values."""
    rows = read_arrow(path, columns=["customer_id", "updated_at", "email"]).to_pylist()
    table = {r["customer_id"]: r for r in rows}
    wrong = [k for k, ts in expected.items() if k not in table or table[k]["updated_at"] != ts]
    extra = [k for k in table if k not in expected]
    bad_email = [k for k, r in table.items() if r["email"] != f"{k}@example.com"]
    ok = not wrong and not extra and not bad_email and len(rows) == len(table)
    return {
        "ok": ok,
        "rows": len(rows),
        "expected_rows": len(expected),
        "duplicate_keys": len(rows) - len(table),
        "missing_or_stale": len(wrong),
        "unexpected": len(extra),
    }


def measure_cold(bench: BenchEnv, workload: Workload) -> dict[str, Any]:
    return _until_caught_up(bench, workload, "cold", "bench-cold")


def measure_rebuild(bench: BenchEnv, workload: Workload, events: int) -> dict[str, Any]:
    if events > workload.produced:
        workload.produce(bench.bootstrap, events - workload.produced)
    return _until_caught_up(bench, workload, "rebuild", "bench-rebuild")


def _until_caught_up(
    bench: BenchEnv, workload: Workload, name: str, version: str
) -> dict[str, Any]:
    """A new version from offset 0 to the end of the log, in a new process."""
    job = bench.streaming(name, "--version", version, "--until-caught-up", *UNALIGNED)
    job.start().wait(RUN_TIMEOUT_S)
    finished = job.finished()
    return {
        "events": workload.produced,
        "wall_s": job.wall_s,
        "excl_start_s": float(finished["duration_s"]),
        "peak_rss_bytes": job.peak_rss,
        "correct": check_table(bench.table_path(version), workload.expected),
    }


def measure_latency(
    bench: BenchEnv,
    workload: Workload,
    rate: int,
    duration_s: float,
    trigger_interval: str,
    warmup_s: float = 15.0,
) -> dict[str, Any]:
    """Catch up on the backlog, then produce at ``rate``; latency of the events after warm-up."""
    version = "bench-live"
    watcher = CommitWatcher(bench.table_path(version), TOPIC)
    watcher.start()
    job = bench.streaming(
        "latency", "--version", version, "--trigger-interval", trigger_interval, *UNALIGNED
    )
    job.start()
    try:
        ends = bench.topic_end()
        _wait_covered(watcher, job, ends, "catching up on the backlog")
        delivered: list[tuple[int, int, int]] = []  # partition, offset, CreateTime ms
        acked: list[float] = []  # time.time() of each delivery report, in the same order

        def on_delivery(err: Any, msg: Any) -> None:
            if err is None and msg.offset() is not None:  # None: a deduplicated retry
                delivered.append((msg.partition(), msg.offset(), msg.timestamp()[1]))
                acked.append(time.time())

        measured_from_ms = (time.time() + warmup_s) * 1000
        workload.produce_at_rate(bench.bootstrap, rate, warmup_s + duration_s, on_delivery)
        for partition, offset, _ in delivered:  # the producer knows where the log ends now
            ends[partition] = max(ends.get(partition, 0), offset + 1)
        _wait_covered(watcher, job, ends, "the last records to become visible")
        job.stop()
    finally:
        if job.alive():
            job.stop()
        commits = watcher.stop()
    measured = [d for d in delivered if d[2] >= measured_from_ms]
    latencies = visible_latencies(measured, commits)
    # The broker's share: CreateTime to the producer's delivery report (acks=all).
    acks = [
        at - d[2] / 1000 for d, at in zip(delivered, acked, strict=True) if d[2] >= measured_from_ms
    ]
    planned = planned_batches(Deployment("customers", version, bench.home).checkpoint)
    waits, runs = split_latencies(measured, planned, commits)
    in_window = [c.seen_at for c in commits if c.seen_at * 1000 >= measured_from_ms]
    intervals = [b - a for a, b in itertools.pairwise(in_window)]
    return {
        "rate": rate,
        "duration_s": duration_s,
        "warmup_s": warmup_s,
        "trigger_interval": trigger_interval,
        "events_measured": len(latencies),
        "p50_s": percentile(latencies, 50),
        "p95_s": percentile(latencies, 95),
        "p99_s": percentile(latencies, 99),
        "max_s": max(latencies),
        "ack_p50_s": percentile(acks, 50),
        "ack_p95_s": percentile(acks, 95),
        "commit_interval_s_median": statistics.median(intervals) if intervals else None,
        "wait_p50_s": percentile(waits, 50) if waits else None,
        "wait_p95_s": percentile(waits, 95) if waits else None,
        "run_p50_s": percentile(runs, 50) if runs else None,
        "run_p95_s": percentile(runs, 95) if runs else None,
        "commits": len(commits),
        "peak_rss_bytes": job.peak_rss,
        "correct": check_table(bench.table_path(version), workload.expected),
    }


def _wait_covered(
    watcher: CommitWatcher, job: MeasuredJob, ends: dict[int, int], what: str
) -> None:
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while not watcher.covered(ends):
        if not job.alive():
            msg = f"the streaming job exited while {what}: see {job.log_file}"
            raise RuntimeError(msg)
        if time.monotonic() > deadline:
            msg = f"timed out {what}: see {job.log_file}"
            raise RuntimeError(msg)
        time.sleep(0.05)


def visible_latencies(
    delivered: list[tuple[int, int, int]], commits: list[SeenCommit]
) -> list[float]:
    """Per record: when the first commit covering its offset was seen, minus its CreateTime."""
    latencies = []
    for partition, offset, created_ms in delivered:
        seen = next((c.seen_at for c in commits if c.end_offsets.get(partition, 0) > offset), None)
        if seen is None:
            msg = f"record {TOPIC}-{partition}@{offset} never became visible"
            raise RuntimeError(msg)
        latencies.append(seen - created_ms / 1000)
    return latencies


def planned_batches(checkpoint: SparkCheckpoint) -> list[tuple[float, dict[int, int]]]:
    """(when Spark planned the batch, its end offsets), in batch order."""
    return [
        (
            checkpoint.planned_at(batch),
            off.from_spark(checkpoint.batch_end_offsets(batch)).get(TOPIC, {}),
        )
        for batch in checkpoint.planned_batches()
    ]


def split_latencies(
    delivered: list[tuple[int, int, int]],
    planned: list[tuple[float, dict[int, int]]],
    commits: list[SeenCommit],
) -> tuple[list[float], list[float]]:
    """Per record: CreateTime to the planning of the batch that read it (waiting for a batch),
    and that planning to its commit becoming visible (the batch running)."""
    waits, runs = [], []
    for partition, offset, created_ms in delivered:
        plan = next((at for at, ends in planned if ends.get(partition, 0) > offset), None)
        seen = next((c.seen_at for c in commits if c.end_offsets.get(partition, 0) > offset), None)
        if plan is not None and seen is not None:
            waits.append(plan - created_ms / 1000)
            runs.append(seen - plan)
    return waits, runs


def percentile(values: list[float], q: float) -> float:
    """Nearest rank: the smallest value with at least ``q`` % of the values at or below it."""
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))
    return ordered[index]


def measure_steady(
    bench: BenchEnv, backlog_end: dict[int, int], expected: dict[str, int], batch_events: int
) -> dict[str, Any]:
    """In this process: the backlog in ``batch_events`` batches, twice to warm Spark up (on two
    cores the JIT compiler takes most of a core for the first million records or so), then once
    more, measured.

    Every run stops at ``backlog_end`` (the first ``--events`` records), whose reference state is
    ``expected``.
    """
    from streaming.define.registry import get_pipeline
    from streaming.kafka import offsets as off
    from streaming.run.options import RunOptions
    from streaming.run.runner import PipelineRunner
    from streaming.settings import load_settings
    from streaming.spark.session import build_spark_session

    settings = load_settings(env=bench.env)
    started = time.perf_counter()
    spark = build_spark_session(settings)
    session_s = time.perf_counter() - started
    runs = {}
    for version in ("bench-warmup-1", "bench-warmup-2", "bench-steady"):
        runner = PipelineRunner(
            spark,
            get_pipeline(settings.pipelines, "customers"),
            Deployment("customers", version, bench.home),
            settings,
            RunOptions(
                mode="until_caught_up",
                report_every_s=3600,
                max_offsets_per_trigger=batch_events,
                follow_live=False,
                ending_offsets=off.dumps({TOPIC: backlog_end}),
            ),
        )
        t0 = time.perf_counter()
        runner.run()
        if len(runner.writer.results) == runner.writer.results.maxlen:
            msg = "more batches than the writer keeps: raise --batch-events"
            raise RuntimeError(msg)
        runs[version] = (time.perf_counter() - t0, list(runner.writer.results))
    warmup_s, _ = runs["bench-warmup-1"]
    _, results = runs["bench-steady"]
    steady = [r for r in results[1:] if r.input_rows >= batch_events // 2]
    if not steady:
        msg = f"no steady-state batches: raise --events above 2 x --batch-events ({batch_events})"
        raise RuntimeError(msg)
    span_s = steady[-1].finished_at - results[0].finished_at
    events = sum(r.input_rows for r in steady)
    return {
        "session_start_s": session_s,
        "first_run_s": warmup_s,
        "batch_events": batch_events,
        "batches": len(steady),
        "events": events,
        "events_per_s": events / span_s,
        "batch_s_median": statistics.median(r.duration_s for r in steady),
        "batch_s_max": max(r.duration_s for r in steady),
        "between_batches_s": (span_s - sum(r.duration_s for r in steady)) / len(steady),
        "correct": check_table(bench.table_path("bench-steady"), expected),
    }
