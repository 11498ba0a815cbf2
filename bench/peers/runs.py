"""One measured run of one engine: cold over a backlog, or continuous at a fixed input rate.

- **cold**: the workload's backlog is in the log; the engine starts (a new process, fresh state)
  and the run ends when its visible output covers the whole log. Wall time is from the process
  start to that moment. Steady state is the rate after the first quarter of the log in the same
  run (that quarter starts and warms the engine up).
- **rate**: fresh topics with the workload's history (customers for the fraud join, else 1,000
  records); the engine starts and catches up; then ``rate`` records/s for the warm-up and the
  measured seconds. A record's latency is from its creation (just before it is handed to the
  producer) to the first moment the engine's visible output covers it.

In both, the peak resident memory of the engine's process tree is sampled every 0.5 s until the
output is complete, and afterwards the output is read back and compared with the reference:
a run whose output differs is reported, and its figures do not count.
"""

from __future__ import annotations

import bisect
import contextlib
import math
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from bench.peers.engines import Engine, RunSpec
from bench.peers.outputs import compare
from bench.peers.producing import (
    LogWriter,
    Written,
    delete_topics,
    recreate_topics,
    write_at_rate,
    write_history,
)
from bench.peers.progress import Position, Probe, wait_for
from bench.peers.reference import Reference, reference_for
from bench.processes import PeakRss
from streaming.settings import Settings

RUN_TIMEOUT_S = 1800.0
WARM_RECORDS = 1_000  # history of a rate run when the workload has none


class EngineProcess:
    """The engine's process in its own group, its log, its tree's peak RSS."""

    def __init__(self, engine: Engine, spec: RunSpec) -> None:
        self.launch = engine.launch(spec)
        self.log_file = spec.log_file
        self.proc: subprocess.Popen[bytes] | None = None
        self.rss: PeakRss | None = None
        self.started_at = 0.0

    def start(self) -> EngineProcess:
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_file, "ab") as log:
            self.started_at = time.time()
            self.proc = subprocess.Popen(
                self.launch.argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self.launch.env,
                cwd=self.launch.cwd,
                start_new_session=True,
            )
        self.rss = PeakRss(self.proc.pid)
        self.rss.start()
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def peak_rss(self) -> int:
        assert self.rss is not None
        return self.rss.stop()

    def stop(self, timeout_s: float = 60.0) -> int | None:
        """SIGTERM to the engine's main process (each stops at a batch or message boundary),
        SIGKILL to its group if it has not exited within ``timeout_s``."""
        if self.proc is None:
            return None
        if self.rss is not None:
            self.rss.stop()
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=timeout_s)
        with contextlib.suppress(ProcessLookupError):  # what is left of the tree
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)
        return self.proc.returncode

    def tail(self, lines: int = 15) -> str:
        try:
            text = self.log_file.read_text(errors="replace")
        except FileNotFoundError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


def _prepare_topics(engine: Engine, spec: RunSpec, settings: Settings) -> None:
    delete_topics(settings, engine.topics_before_run(spec))
    if engine.writes_topic:
        recreate_topics(settings, [spec.output_topic])


def _drop_run_topics(settings: Settings, spec: RunSpec) -> None:
    """The run's output topic and the engine's internal topics (they carry the run id)."""
    delete_topics(settings, lambda name: spec.run_id in name)


def until_complete(
    probe: Probe, process: EngineProcess, ends: Position, watermark: int, what: str
) -> float:
    """When the engine's output covered ``ends`` (and reached ``watermark``)."""

    def done() -> float | None:
        at = probe.covers(ends, watermark)
        if at is None and not process.alive():
            time.sleep(5 * probe.interval_s)  # a last commit, seen just after the exit
            at = probe.covers(ends, watermark)
            if at is None:
                code = process.proc.returncode if process.proc else None
                msg = f"the engine exited ({code}) while {what}:\n{process.tail()}"
                raise RuntimeError(msg)
        return at

    return wait_for(probe, done, lambda: True, RUN_TIMEOUT_S, what)


def cold_run(
    engine: Engine, spec: RunSpec, settings: Settings, written: Written, expected: dict
) -> dict[str, Any]:
    """The engine over the backlog ``written``; its figures and its verdict."""
    _prepare_topics(engine, spec, settings)
    ends = {where: end for where, end in written.ends.items() if where[0] in spec.workload.topics}
    total = sum(ends.values())
    probe = engine.probe(spec)
    probe.start()
    load_before = os.getloadavg()
    process = EngineProcess(engine, spec).start()
    try:
        watermark = engine.final_watermark(spec, written.last_ts)
        done_at = until_complete(probe, process, ends, watermark, "processing the backlog")
        peak = process.peak_rss()
        load_after = os.getloadavg()
    finally:
        code = process.stop()
        probe.stop()
    verdict = compare(engine.output(spec), expected)
    _drop_run_topics(settings, spec)
    return {
        "wall_s": done_at - process.started_at,
        # Up to the input covered: Spark's outer join needs one more batch, with no input.
        "steady_events_per_s": steady_rate(probe, total, probe.covers(ends) or done_at),
        "events": total,
        "peak_rss_bytes": peak,
        "verdict": verdict.as_dict(),
        "load_before": load_before,
        "load_after": load_after,
        "exit_code": code,
    }


def steady_rate(probe: Probe, total: int, done_at: float) -> float | None:
    """Records/s between the first sight of a quarter of the log covered and the end (None
    when fewer than a quarter of the log came after that sight: too few batches to tell; a log
    read in one batch would be rated on its few closing records). A quarter: an engine whose
    first batch is half the log (250,000 of 500,000 records, which the split over partitions can
    leave a few records short of half) is still rated on its later batches."""
    quarter = next(
        (at for at, position, _ in probe.seen if sum(position.values()) >= total / 4), None
    )
    if quarter is None or done_at <= quarter:
        return None
    after = total - probe.count_at(quarter)
    return after / (done_at - quarter) if after >= total / 4 else None


def rate_run(
    engine: Engine,
    spec: RunSpec,
    settings: Settings,
    make_workload: Any,
    rate: int,
    seconds: float,
    warmup_s: float,
    extra_history: int = 0,
) -> dict[str, Any]:
    """The engine fed ``rate`` records/s; per-record latency, peak RSS and verdict.
    ``extra_history`` records of the workload's mix are in the log before the engine starts."""
    workload = make_workload()
    recreate_topics(settings, workload.topics)
    _prepare_topics(engine, spec, settings)
    reference: Reference = reference_for(workload.name)
    writer = LogWriter(spec.bootstrap, reference.add, linger_ms=2)
    if workload.history or extra_history:
        write_history(writer, workload, extra_history)
    else:
        for _ in range(WARM_RECORDS):
            writer.write(workload.next(int(time.time() * 1000)))
        writer.flush()
    probe = engine.probe(spec)
    probe.start()
    load_before = os.getloadavg()
    process = EngineProcess(engine, spec).start()
    try:
        history = dict(writer.written.ends)
        until_complete(probe, process, history, 0, "catching up on the history")
        measured_from = time.time() + warmup_s
        write_at_rate(writer, workload, rate, warmup_s + seconds)
        written = writer.flush()
        watermark = engine.final_watermark(spec, written.last_ts)
        until_complete(probe, process, written.ends, watermark, "the last records to show")
        peak = process.peak_rss()
        load_after = os.getloadavg()
    finally:
        code = process.stop()
        probe.stop()
    verdict = compare(engine.output(spec), reference.table())
    _drop_run_topics(settings, spec)
    measured = [t for t in written.timed if t[3] >= measured_from]
    latencies = record_latencies(probe, measured)
    return {
        "rate": rate,
        "seconds": seconds,
        "warmup_s": warmup_s,
        "history": sum(history.values()),
        "records_measured": len(latencies),
        "p50_s": percentile(latencies, 50),
        "p95_s": percentile(latencies, 95),
        "p99_s": percentile(latencies, 99),
        "max_s": max(latencies) if latencies else None,
        "peak_rss_bytes": peak,
        "verdict": verdict.as_dict(),
        "load_before": load_before,
        "load_after": load_after,
        "exit_code": code,
    }


def record_latencies(probe: Probe, records: list[tuple[str, int, int, float]]) -> list[float]:
    """Per record (topic, partition, offset, created): first covered minus created."""
    steps: dict[tuple[str, int], tuple[list[int], list[float]]] = {}
    for at, position, _ in probe.seen:
        for where, offset in position.items():
            offsets, times = steps.setdefault(where, ([], []))
            if not offsets or offset > offsets[-1]:
                offsets.append(offset)
                times.append(at)
    latencies = []
    for topic, partition, offset, created in records:
        offsets, times = steps.get((topic, partition), ([], []))
        i = bisect.bisect_right(offsets, offset)
        if i == len(offsets):
            msg = f"record {topic}-{partition}@{offset} never became visible"
            raise RuntimeError(msg)
        latencies.append(times[i] - created)
    return latencies


def percentile(values: list[float], q: float) -> float | None:
    """Nearest rank: the smallest value with at least ``q`` % of the values at or below it."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))]


def work_dir(root: Path, run_id: str) -> Path:
    path = root / run_id
    path.mkdir(parents=True, exist_ok=True)
    return path
