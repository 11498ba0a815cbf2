"""Processing one micro-batch exactly once: skip a batch already committed, have the pipeline's
engine compute and write the batch, commit its dead letters and its table changes.

Every pipeline's rows stay on the executors: a plan runs there with its state
(``streaming.run.planned_batch``), a deprecated per-batch transform's changes and dead letters
are written there as files of the table and of the dead-letter table
(``streaming.run.transform_batch``); the driver commits the files' entries.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame

from streaming.define.pipeline import Pipeline
from streaming.delta.compacted_table import CompactedTable
from streaming.delta.dead_letters import DeadLetters
from streaming.deployment import Deployment
from streaming.run.batch_engine import BatchEngine
from streaming.run.changelog_publisher import ChangelogPublisher
from streaming.run.copartition import StatePartitions
from streaming.run.planned_batch import PlannedBatch
from streaming.run.transform_batch import TransformBatch

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
    """The ``foreachBatch`` function of one deployment: skips a batch the table committed
    before, has the pipeline's engine compute and write the others, commits what it wrote, and
    keeps the results."""

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
        self.table = CompactedTable(
            deployment.table_path, pipeline.table_schema, pipeline.table, deployment.app_id
        )
        self.dead_letters = DeadLetters(deployment.dead_letter_path, deployment.app_id)
        self.engine: BatchEngine
        if pipeline.plan is not None:
            assert partitions is not None, "a plan runs with its state partitions"
            self.engine = PlannedBatch(
                pipeline, deployment, self.table, self.dead_letters, partitions, client, publisher
            )
        else:
            self.engine = TransformBatch(pipeline, self.table, self.dead_letters)
        self.results: deque[BatchResult] = deque(maxlen=RECENT_RESULTS)
        self.totals = BatchTotals()

    def close(self) -> None:
        """Stop the table's background upkeep once the query is over (waits for its step), and
        release what the engine holds (the publisher's clients)."""
        self.table.close()
        self.engine.close()

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        started = time.monotonic()
        end_offsets = self.deployment.checkpoint.batch_end_offsets(batch_id)
        with self.table.batch():
            committed = self.table.committed_batch()
            if committed is not None and committed >= batch_id:
                version = self.table.version()
                self._record(batch_id, True, 0, 0, 0, version, end_offsets, started)
                return
            written = self.engine.write(batch, batch_id, end_offsets, committed)
            dead_count = 0
            if written.dead_letters is not None:
                dead_count = self.dead_letters.commit(written.dead_letters, batch_id)
            info = (end_offsets, self.deployment.id, self.pipeline.fingerprint)
            if written.changes is not None:
                result = self.table.apply(written.changes, batch_id, *info)
            else:
                assert written.shares is not None
                versions = written.state_versions
                result = self.table.commit_shares(
                    written.shares, batch_id, *info, state_versions=versions
                )
            if not result.skipped:
                self.engine.committed(batch_id, written)
        self._record(
            batch_id,
            result.skipped,
            written.input_rows,
            dead_count,
            result.source_rows,
            result.table_version,
            end_offsets,
            started,
        )

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
