"""Processing one micro-batch: decode, transform, dead-letter, and commit exactly once.

Every pipeline's rows stay on the executors: a transform's changes and dead letters are written
there as files of the table and of the dead-letter table, a plan runs there with its state
(``streaming.run.planned_batch``); the driver commits the files' entries.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Mapping
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame

from streaming.define.pipeline import Pipeline
from streaming.delta.compacted_table import CommitResult, CompactedTable
from streaming.delta.dead_letters import DeadLetters
from streaming.deployment import Deployment
from streaming.kafka.decode import BatchSplitter
from streaming.run.copartition import StatePartitions
from streaming.run.crash_point import crash_point
from streaming.run.executor_writes import write_dead_letters, write_shares
from streaming.run.planned_batch import PlannedBatch
from streaming.run.publication import ChangelogPublisher

# Results kept for reports (the last one) and benchmarks (per-batch timings); totals cover them all.
RECENT_RESULTS = 100


@dataclass(frozen=True)
class BatchResult:
    batch_id: int
    skipped: bool
    input_rows: int
    dead_lettered: int
    changed_keys: int
    table_version: int
    end_offsets: dict[str, Any]
    duration_s: float
    finished_at: float


@dataclass
class BatchTotals:
    """What every batch of this run added up to (skipped batches count as replays)."""

    batches: int = 0  # committed by this run
    input_rows: int = 0
    dead_lettered: int = 0

    def add(self, result: BatchResult) -> None:
        self.batches += 0 if result.skipped else 1
        self.input_rows += result.input_rows
        self.dead_lettered += result.dead_lettered


class BatchWriter:
    """The ``foreachBatch`` function of one deployment."""

    def __init__(
        self,
        pipeline: Pipeline,
        deployment: Deployment,
        publisher: ChangelogPublisher | None = None,
        partitions: StatePartitions | None = None,
        client: Mapping[str, str] | None = None,
    ) -> None:
        self.pipeline = pipeline
        self.deployment = deployment
        stateful = pipeline.plan is not None
        self.splitter = None if stateful else BatchSplitter(pipeline)
        self.table = CompactedTable(
            deployment.table_path, pipeline.table_schema, pipeline.table, deployment.app_id
        )
        self.dead_letters = DeadLetters(deployment.dead_letter_path, deployment.app_id)
        self.planned = None
        if stateful:
            assert partitions is not None, "a plan runs with its state partitions"
            self.planned = PlannedBatch(
                pipeline, deployment, self.table, self.dead_letters, partitions, client
            )
        self.change_schema = pipeline.table.change_schema(pipeline.table_schema)
        self.publisher = publisher
        self.results: deque[BatchResult] = deque(maxlen=RECENT_RESULTS)
        self.totals = BatchTotals()

    def close(self) -> None:
        """Stop the table's background upkeep once the query is over (waits for its step), and
        close the publisher's clients."""
        self.table.close()
        if self.publisher is not None:
            self.publisher.close()

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        started = time.monotonic()
        end_offsets = self.deployment.checkpoint.batch_end_offsets(batch_id)
        with self.table.batch():
            committed = self.table.committed_batch()
            if committed is not None and committed >= batch_id:
                version = self.table.version()
                self._record(batch_id, True, 0, 0, 0, version, end_offsets, started)
                return
            info = (end_offsets, self.deployment.id, self.pipeline.fingerprint)
            if self.planned is not None:
                publishing = self.publisher.batch(batch_id) if self.publisher else nullcontext()
                with publishing as publisher:  # the live pointer held while the tasks publish
                    planned = self.planned.run(batch, batch_id, end_offsets, committed, publisher)
                # Every partition's share is published before the commit: a replay finds it.
                if planned.published:
                    crash_point("published", batch_id)
                input_rows = planned.input_rows
                dead_count = self.dead_letters.commit(planned.dead_letters, batch_id)
                result = self.table.commit_shares(
                    planned.shares, batch_id, *info, state_versions=planned.state_versions
                )
                if not result.skipped:
                    self.planned.committed(batch_id, planned.state_versions)
            else:
                result, input_rows, dead_count = self._transform(batch, batch_id, info)
        self._record(
            batch_id,
            result.skipped,
            input_rows,
            dead_count,
            result.source_rows,
            result.table_version,
            end_offsets,
            started,
        )

    def _transform(
        self, batch: DataFrame, batch_id: int, info: tuple[dict[str, Any], str, str]
    ) -> tuple[CommitResult, int, int]:
        """Write and commit the per-batch transform's changes: the commit, the input count and
        the dead letters written."""
        assert self.splitter is not None and self.pipeline.transform is not None
        # One Spark job (one stage) reads the source once, writes or returns the changes and
        # counts the records; a second one collects dead letters, only when there are any.
        decoded = self.splitter.split(batch)
        changes = self.pipeline.transform(decoded.good)
        if self.table.writes_shares:
            writer, version = self.table.share_writer(), self.table.version()
            shares = write_shares(changes, writer, self.change_schema, batch_id, version)
        else:
            arrow = changes.toArrow().select(self.change_schema.names).cast(self.change_schema)
        input_rows, dead_rows = decoded.counts()
        dead_count = 0
        if dead_rows:
            files = write_dead_letters(decoded.dead, self.dead_letters.files, batch_id)
            dead_count = self.dead_letters.commit(files, batch_id)
        if self.table.writes_shares:
            result = self.table.commit_shares(shares, batch_id, *info)
        else:
            result = self.table.apply(arrow, batch_id, *info)
        return result, input_rows, dead_count

    def _record(
        self,
        batch_id: int,
        skipped: bool,
        rows: int,
        dead: int,
        changed: int,
        table_version: int,
        end_offsets: dict[str, Any],
        started: float,
    ) -> None:
        result = BatchResult(
            batch_id=batch_id,
            skipped=skipped,
            input_rows=rows,
            dead_lettered=dead,
            changed_keys=changed,
            table_version=table_version,
            end_offsets=end_offsets,
            duration_s=time.monotonic() - started,
            finished_at=time.time(),
        )
        self.results.append(result)
        self.totals.add(result)
