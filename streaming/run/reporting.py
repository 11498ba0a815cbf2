"""What a running deployment tells the outside world, and through which channel.

A :class:`Snapshot` is a plain, JSON-able record of a deployment's health. Reporters send it
somewhere: :class:`LogReporter` prints JSON lines (the CLI), ``streaming.run.pipes_reporter``
sends it to Dagster through Dagster Pipes. The streaming job itself knows nothing about Dagster.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from streaming.kafka import offsets as off
from streaming.kafka.log import KafkaLog

if TYPE_CHECKING:
    from streaming.define.pipeline import Pipeline
    from streaming.deployment import Deployment
    from streaming.run.micro_batch import BatchResult, BatchWriter
    from streaming.settings import Settings


# How old the log ends in a health report may be: the source measures them every trigger, and a
# report reuses that measurement when it is recent enough.
ENDS_MAX_AGE_S = 10.0


@dataclass(frozen=True)
class Snapshot:
    pipeline: str
    version: str
    deployment: str
    fingerprint: str
    state: str
    committed_offsets: dict[str, dict[str, int]]
    latest_offsets: dict[str, dict[str, int]]
    lag: dict[str, dict[str, int]]
    total_lag: int
    batches: int
    records_processed: int
    input_rows_per_s: float
    processed_rows_per_s: float
    last_batch_duration_s: float
    last_batch_at: float | None
    table_rows: int
    table_version: int
    table_path: str
    dead_lettered_total: int
    dead_lettered_run: int
    duration_s: float
    taken_at: float = field(default_factory=time.time)
    # The fingerprint the table was built with, when it differs from the running code's: the
    # pipeline's code changed without a new version.
    fingerprint_drift: str = ""
    # The version's role (streaming.versions.state); a version that follows the live one also
    # reports its catch-up progress.
    role: str = ""
    live_version: str = ""
    behind_live: int | None = None
    catch_up_pct: float | None = None
    catch_up_eta_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Reporter(Protocol):
    def started(self, deployment: Deployment, options: Any, settings: Settings) -> None: ...
    def warning(self, message: str) -> None: ...
    def progress(self, snapshot: Snapshot) -> None: ...
    def finished(self, snapshot: Snapshot) -> None: ...


class NullReporter:
    def started(self, deployment: Deployment, options: Any, settings: Settings) -> None:
        pass

    def warning(self, message: str) -> None:
        pass

    def progress(self, snapshot: Snapshot) -> None:
        pass

    def finished(self, snapshot: Snapshot) -> None:
        pass


class LogReporter:
    """One JSON line per event on a stream (stderr by default)."""

    def __init__(self, stream: Any = None) -> None:
        self.stream = stream or sys.stderr

    def _emit(self, event: str, payload: Mapping[str, Any]) -> None:
        print(json.dumps({"event": event, **payload}, default=str), file=self.stream, flush=True)

    def started(self, deployment: Deployment, options: Any, settings: Settings) -> None:
        self._emit(
            "started",
            {
                "deployment": deployment.id,
                "options": options.model_dump(),
                "settings": settings.shown(),
            },
        )

    def warning(self, message: str) -> None:
        self._emit("warning", {"message": message})

    def progress(self, snapshot: Snapshot) -> None:
        self._emit("progress", _summary(snapshot))

    def finished(self, snapshot: Snapshot) -> None:
        self._emit("finished", _summary(snapshot))


def _summary(snapshot: Snapshot) -> dict[str, Any]:
    keys = (
        "deployment",
        "state",
        "total_lag",
        "batches",
        "records_processed",
        "table_rows",
        "dead_lettered_total",
        "processed_rows_per_s",
        "duration_s",
    )
    summary = {k: getattr(snapshot, k) for k in keys}
    if snapshot.behind_live is not None:
        summary.update(
            live_version=snapshot.live_version,
            behind_live=snapshot.behind_live,
            catch_up_pct=snapshot.catch_up_pct,
            catch_up_eta_s=snapshot.catch_up_eta_s,
        )
    return summary


def take_snapshot(
    pipeline: Pipeline,
    deployment: Deployment,
    writer: BatchWriter,
    last_progress: Mapping[str, Any] | None,
    started: float,
    state: str,
    log: KafkaLog,
    committed_before: off.OffsetMap,
    fingerprint_drift: str = "",
) -> Snapshot:
    """Measure a deployment now: its table, its dead letters, and its lag against the log.

    ``committed_before`` is the table's position when this run started (its last commit's end
    offsets), the position until the run commits a batch of its own.
    """
    last = writer.results[-1] if writer.results else None
    committed = off.from_spark(last.end_offsets) if last else committed_before
    latest = reported_ends(last_progress, pipeline.topics, ENDS_MAX_AGE_S)
    if latest is None:
        latest = log.latest(pipeline.topics)
    lag = {
        t: {str(p): max(0, end - committed.get(t, {}).get(p, 0)) for p, end in parts.items()}
        for t, parts in latest.items()
    }
    arrived, processed = batch_rates(writer.results)
    table = writer.table
    return Snapshot(
        pipeline=pipeline.name,
        version=deployment.version,
        deployment=deployment.id,
        fingerprint=pipeline.fingerprint,
        state=state,
        committed_offsets=off.to_spark(committed),
        latest_offsets=off.to_spark(latest),
        lag=lag,
        total_lag=off.total_lag(committed, latest),
        batches=writer.totals.batches,
        records_processed=writer.totals.input_rows,
        input_rows_per_s=arrived,
        processed_rows_per_s=processed,
        last_batch_duration_s=last.duration_s if last else 0.0,
        last_batch_at=last.finished_at if last else None,
        table_rows=table.row_count(),
        table_version=table.version(),
        table_path=str(deployment.table_path),
        dead_lettered_total=writer.dead_letters.count(),
        dead_lettered_run=writer.totals.dead_lettered,
        duration_s=time.time() - started,
        fingerprint_drift=fingerprint_drift,
    )


def batch_rates(results: Sequence[BatchResult]) -> tuple[float, float]:
    """Records per second (arrived, processed) of the last batch this run committed, from the
    writer's own counts: Spark's progress counts the rows the source hands over, which for a
    plan are offset ranges, not records."""
    done = [r for r in results if not r.skipped]
    if not done:
        return 0.0, 0.0
    last = done[-1]
    processed = last.input_rows / last.duration_s if last.duration_s > 0 else 0.0
    if len(done) < 2 or last.finished_at <= done[-2].finished_at:
        return processed, processed
    return last.input_rows / (last.finished_at - done[-2].finished_at), processed


def reported_ends(
    progress: Mapping[str, Any] | None, topics: tuple[str, ...], max_age_s: float
) -> off.OffsetMap | None:
    """The log ends the query's source measured at its last trigger (Spark's ``latestOffset``
    in the query progress), if that trigger started within ``max_age_s`` and they cover every
    topic; else None."""
    if not progress or not progress.get("timestamp"):
        return None
    try:
        started = datetime.fromisoformat(str(progress["timestamp"])).timestamp()
    except ValueError:
        return None
    if time.time() - started > max_age_s:
        return None
    ends: off.OffsetMap = {}
    for source in progress.get("sources") or []:
        latest = source.get("latestOffset")
        try:
            parsed = json.loads(latest) if isinstance(latest, str) else latest
        except ValueError:
            continue
        if isinstance(parsed, dict):
            ends.update(off.from_spark(parsed))
    if not all(ends.get(topic) for topic in topics):
        return None
    return {topic: ends[topic] for topic in topics}
