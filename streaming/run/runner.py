"""Running one deployment as a Spark Structured Streaming query.

``until_caught_up`` processes everything available when the query starts (availableNow) and
returns; otherwise the query runs until :meth:`PipelineRunner.request_stop`, which stops it at a
micro-batch boundary. Progress goes to a :class:`streaming.run.reporting.Reporter`.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import Any

from pyspark.errors import StreamingQueryException
from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from streaming.define.pipeline import Pipeline
from streaming.delta.commit_info import Commit
from streaming.delta.table_reader import latest_commit
from streaming.deployment import Deployment
from streaming.errors import DataLossError, RunError
from streaming.kafka import offsets as off
from streaming.kafka.decode import source_options
from streaming.kafka.log import KafkaLog, topic_partitions_or_error
from streaming.kafka.source import FORMAT
from streaming.run.changelog_publisher import ChangelogPublisher
from streaming.run.copartition import StatePartitions, state_partitions
from streaming.run.health import CAUGHT_UP, RUNNING, STOPPED, classify
from streaming.run.micro_batch import BatchWriter
from streaming.run.options import RunOptions
from streaming.run.reporting import NullReporter, Reporter, Snapshot, take_snapshot
from streaming.settings import Settings
from streaming.versions.alignment import LiveAlignment
from streaming.versions.state import pipeline_versions


class PipelineRunner:
    def __init__(
        self,
        spark: SparkSession,
        pipeline: Pipeline,
        deployment: Deployment,
        settings: Settings,
        options: RunOptions,
        reporter: Reporter | None = None,
        stop: threading.Event | None = None,
    ) -> None:
        self.spark = spark
        self.pipeline = pipeline
        self.deployment = deployment
        self.settings = settings
        self.kafka = settings.kafka
        self.options = options
        self.reporter = reporter or NullReporter()
        publisher = None
        if pipeline.publish is not None:
            key = pipeline.table.keys
            publisher = ChangelogPublisher(settings, deployment, pipeline.publish, key)
        elif pipeline.stream_output is not None:
            output = pipeline.stream_output
            keys = pipeline.table.keys
            publisher = ChangelogPublisher(settings, deployment, output.topics[0], keys, output)
        self._stop = stop or threading.Event()
        self._query: StreamingQuery | None = None
        self._previous_lag: int | None = None
        self._drift = ""
        self._committed_before: off.OffsetMap = {}  # the table's position when this run started
        # Connects on first use, reused per report.
        self._log = KafkaLog.of(settings.kafka)
        self.partitions = self._state_partitions()
        client = settings.kafka.client_config()
        self.writer = BatchWriter(pipeline, deployment, publisher, self.partitions, client)
        self.alignment = LiveAlignment(deployment) if options.follow_live else None

    def _state_partitions(self) -> StatePartitions | None:
        """How a plan's state is split (refused now if its inputs are not co-partitioned)."""
        plan = self.pipeline.plan
        if plan is None:
            return None
        found = topic_partitions_or_error(self._log, list(plan.topics))
        return state_partitions(plan, {topic: len(parts) for topic, parts in found.items()})

    def request_stop(self) -> None:
        """Ask the query to stop after the batch in flight (safe from a signal handler)."""
        self._stop.set()

    def _starting_offsets(self) -> str:
        """The source's starting offsets: a fresh query's are resolved now and recorded, so its
        first batch starts at the same offsets however often it restarts before committing."""
        checkpoint = self.deployment.checkpoint
        if checkpoint.started:
            return self.options.starting_offsets
        recorded = checkpoint.start_offsets()
        if recorded is None:
            topics = list(self.pipeline.topics)
            spec = off.parse_starting_offsets(self.options.starting_offsets, topics)
            earliest, latest = self._log.bounds(self.pipeline.topics)
            recorded = off.resolve_start(spec, earliest, latest)
            self.deployment.checkpoint_path.mkdir(parents=True, exist_ok=True)
            checkpoint.record_start(recorded)
        return off.dumps(recorded)

    def start(self) -> StreamingQuery:
        reader = (
            self.spark.readStream.format(FORMAT)
            .option("subscribe", ",".join(self.pipeline.topics))
            .option("startingOffsets", self._starting_offsets())
            .option("failOnDataLoss", str(self.options.fail_on_data_loss).lower())
        )
        for key, value in source_options(self.pipeline).items():
            reader = reader.option(key, value)
        # One task per core at most, and small batches in one task (offsets.pack_ranges). A
        # plan's batch never reads the source's rows: its tasks read their own offset ranges
        # (streaming.run.planned_batch), so only a transform's batch is planned here.
        tasks = self.spark.sparkContext.defaultParallelism
        reader = reader.option("maxPartitions", str(tasks))
        reader = reader.option("minPartitionRecords", str(off.MIN_TASK_RECORDS))
        if self.options.ending_offsets:
            reader = reader.option("endingOffsets", self.options.ending_offsets)
        if self.alignment is not None:
            self.alignment.refresh()
            reader = reader.option("endingOffsetsFile", str(self.alignment.path))
        # Batches end at the shared cuts, so tables of different pipelines can be read at one
        # position of the log (streaming.kafka.cuts); composes with the alignment cap above.
        cuts = self.settings.cuts
        if cuts.enabled:
            reader = reader.option("cutLog", str(self.settings.home.cuts))
            reader = reader.option("cutIntervalMs", str(max(1, round(cuts.interval_s * 1000))))
            reader = reader.option("cutRetentionMs", str(max(1, round(cuts.retention_s * 1000))))
        reader = reader.option("maxOffsetsPerTrigger", str(self.options.batch_records))
        for key, value in self.kafka.client_config().items():
            reader = reader.option(f"kafka.{key}", value)
        writer = (
            reader.load()
            .writeStream.foreachBatch(self.writer)
            .option("checkpointLocation", str(self.deployment.checkpoint_path))
            .queryName(self.deployment.id)
        )
        if self.options.until_caught_up:
            writer = writer.trigger(availableNow=True)
        else:
            writer = writer.trigger(processingTime=self.options.trigger_interval)
        self.deployment.checkpoint_path.mkdir(parents=True, exist_ok=True)
        self._query = writer.start()
        return self._query

    def run(self) -> Snapshot:
        """Run until caught up or stopped; returns the final snapshot. Raises on failure."""
        started = time.time()
        previous = latest_commit(self.deployment.table_path)
        self._drift = fingerprint_drift(self.pipeline, previous)
        self._committed_before = previous.end_offsets if previous else {}
        query = self.start()
        self.reporter.started(self.deployment, self.options, self.settings)
        if self._drift:
            self.reporter.warning(
                f"{self.deployment.id}: the pipeline's code changed since this table was built "
                f"(fingerprint {self._drift} -> {self.pipeline.fingerprint}) but its version is "
                f"still {self.deployment.version}; bump VERSION to rebuild side by side"
            )
        next_report = time.monotonic() + self.options.report_every_s
        # Each look at the query is a call into the JVM, so a continuous query, which a stop
        # ends (the wait wakes at once), is looked at once a second; a run to the log's end
        # returns soon after its last batch.
        look_every_s = 0.25 if self.options.until_caught_up else 1.0
        try:
            while query.isActive:
                if self._stop.wait(look_every_s):
                    self._stop_gracefully(query)
                    break
                if self.alignment is not None:
                    self.alignment.refresh()
                if time.monotonic() >= next_report:
                    self.reporter.progress(self._live_snapshot(query, started))
                    next_report = time.monotonic() + self.options.report_every_s
            _raise_failure(query)
            final = self._snapshot(query, started, STOPPED if self._stop.is_set() else CAUGHT_UP)
        except BaseException:
            if query.isActive:
                query.stop()
            raise
        finally:
            # Failed or not: the engine starts a failed query again with a reader and writer
            # of its own.
            self._log.close()
            self.writer.close()
        self.reporter.finished(final)
        return final

    def _stop_gracefully(self, query: StreamingQuery) -> None:
        deadline = time.monotonic() + self.options.graceful_stop_timeout_s
        while (
            query.isActive and query.status.get("isTriggerActive") and (time.monotonic() < deadline)
        ):
            time.sleep(0.05)
        query.stop()

    def _live_snapshot(self, query: StreamingQuery, started: float) -> Snapshot:
        snapshot = self._snapshot(query, started, RUNNING)
        last_progress = snapshot.last_batch_at or started
        state = classify(
            snapshot.total_lag,
            self._previous_lag,
            time.time() - last_progress,
            self.options.thresholds,
        )
        self._previous_lag = snapshot.total_lag
        return replace(snapshot, state=state)

    def _snapshot(self, query: StreamingQuery, started: float, state: str) -> Snapshot:
        snapshot = take_snapshot(
            self.pipeline,
            self.deployment,
            self.writer,
            query.lastProgress,
            started,
            state,
            self._log,
            self._committed_before,
            self._drift,
        )
        return self._with_role(snapshot)

    def _with_role(self, snapshot: Snapshot) -> Snapshot:
        """The deployment's role, and a version's progress toward the live version's position
        while it follows the live one."""
        versions = pipeline_versions(self.settings, self.pipeline.name)
        snapshot = replace(snapshot, role=str(versions.role(self.deployment.version)))
        if self.alignment is None or not self.alignment.following:
            return snapshot
        committed = off.from_spark(snapshot.committed_offsets)
        catch_up = self.alignment.catch_up(committed, self._log.earliest(self.pipeline.topics))
        if catch_up is None:
            return snapshot
        eta = catch_up.eta_s(snapshot.processed_rows_per_s)
        return replace(
            snapshot,
            live_version=catch_up.live_version,
            behind_live=catch_up.behind,
            catch_up_pct=catch_up.done_pct,
            catch_up_eta_s=None if eta is None else round(eta, 1),
        )


def _raise_failure(query: StreamingQuery) -> None:
    try:
        error: Any = query.exception()
    except StreamingQueryException as exc:  # some versions raise instead of returning
        error = exc
    if error is None:
        return
    text = str(error)
    if "DATA LOSS:" in text:
        detail = text.split("DATA LOSS:", 1)[1].split(". The query stopped", 1)[0].strip()
        raise DataLossError(detail)
    msg = f"streaming query {query.name} failed: {failure_cause(text)}"
    hint = next((h for marker, h in _STORAGE_HINTS if marker in text), "")
    raise RunError(f"{msg}; {hint}" if hint else msg)


_FULL = "the disk holding the platform home is full"
_READ_ONLY = "the platform home is on a read-only filesystem"
_ADVICE = ": fix it and run again; the query resumes from its checkpoint, nothing is lost"
_STORAGE_HINTS = (
    ("No space left on device", _FULL + _ADVICE),
    ("os error 28", _FULL + _ADVICE),
    ("Read-only file system", _READ_ONLY + _ADVICE),
    ("os error 30", _READ_ONLY + _ADVICE),
)


def failure_cause(text: str) -> str:
    """The most telling line of a query failure.

    A failure in ``foreachBatch`` reaches us as a JVM error whose first line is only "An exception
    was raised by the Python Proxy"; the cause is the exception line ending the Python traceback
    embedded in it (e.g. ``DeltaError: ... Read-only file system (os error 30)``).
    """
    lines = text.splitlines()
    cause, in_traceback = "", False
    for line in lines:
        if line.rstrip().endswith("Traceback (most recent call last):"):
            in_traceback = True
        elif in_traceback and line.strip() and not line[0].isspace():
            cause, in_traceback = line.strip(), False
    return cause or next((line for line in lines if line.strip()), text)


def fingerprint_drift(pipeline: Pipeline, last: Commit | None) -> str:
    """The fingerprint the table's last commit was built with, if the code has changed since."""
    recorded = last.fingerprint if last else ""
    return recorded if recorded and recorded != pipeline.fingerprint else ""
