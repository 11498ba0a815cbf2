"""One micro-batch of a stateful plan, run where the data is: the driver plans, the executors
compute, the driver commits.

The batch's offset ranges are packed so that partition ``p`` of every input is in one Spark task,
so a plan whose inputs are co-partitioned (``streaming.run.copartition``) runs as one state
partition per input partition (``streaming.run.partition_task``, run as an RDD job by
``streaming.run.task_job``): the task reads and decodes the records, runs the
operator with the partition's state, writes the state's changelog, the table's data file and the
dead letters, and returns the files' entries, the changed keys and the state's new version. The
driver never holds a record or an output row: it collects those small rows and commits them as
one Delta log entry carrying the batch's source offsets and the state's version (per state
partition, the batch whose state files the table reflects). A plan that regroups another's table
runs a second stage of tasks after a shuffle by group (``streaming.run.group_task``).

Exactly once: a task loads its partition's state at the version the table's last commit records,
so a batch whose commit never happened (the process or an executor died) is computed again from
the same state, and its state files are rewritten; the store ignores, then removes, files of a
batch the table does not record.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import nullcontext
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame

from streaming.define.pipeline import Pipeline
from streaming.delta.compacted_table import CompactedTable
from streaming.delta.data_files import share_schema
from streaming.delta.dead_letters import ENTRY_SCHEMA, DeadLetters
from streaming.delta.table_reader import latest_commit
from streaming.deployment import Deployment
from streaming.errors import RunError
from streaming.kafka import offsets as off
from streaming.kafka.offsets import PartitionRange
from streaming.operators import Regrouping
from streaming.run.batch_engine import Written
from streaming.run.changelog_publisher import ChangelogPublisher
from streaming.run.copartition import StatePartitions
from streaming.run.crash_point import crash_point
from streaming.run.group_task import GroupTask
from streaming.run.partition_publisher import PartitionPublisher
from streaming.run.partition_task import DEAD_PREFIX, PartitionTask, result_schema
from streaming.run.task_job import run_regrouped, run_tasks


@dataclass(frozen=True)
class PlannedChanges:
    """What the executors did for one batch, as the driver commits it."""

    shares: pa.Table  # the table's written shares (``streaming.delta.data_files``)
    dead_letters: pa.Table  # the dead-letter files' entries
    input_rows: int
    state_versions: dict[int, int]  # after the batch
    published: int  # records the tasks sent to the published topic


class PlannedBatch:
    """Runs one deployment's plan on the executors, one micro-batch at a time."""

    def __init__(
        self,
        pipeline: Pipeline,
        deployment: Deployment,
        table: CompactedTable,
        dead_letters: DeadLetters,
        partitions: StatePartitions,
        client: Mapping[str, str] | None = None,
        publisher: ChangelogPublisher | None = None,
    ) -> None:
        """``client``: the Kafka client settings with which the tasks read their records;
        ``publisher``: the driver's side of the pipeline's publication, when it publishes its
        changes."""
        assert pipeline.plan is not None
        self.plan = pipeline.plan
        self.schema = pipeline.table_schema
        self.deployment = deployment
        self.table = table
        self.dead_letters = dead_letters
        self.partitions = partitions
        self.client = dict(client) if client is not None else None
        self.publisher = publisher
        self._versions: tuple[int | None, dict[int, int]] | None = None  # (as of batch, versions)
        self._partition_sets: dict[str, set[str]] | None = None
        # A plan over another's table whose first half splits by input partition regroups its
        # rows in a second stage of tasks, after a shuffle (``streaming.run.group_task``).
        self.regroups = partitions.by_partition and isinstance(self.plan.operator, Regrouping)
        refuse_undivided_state(deployment)

    def write(
        self, batch: DataFrame, batch_id: int, ends: dict[str, Any], committed: int | None
    ) -> Written:
        """Run batch ``batch_id`` while the publication holds the live pointer, its tasks
        publishing their shares when this version publishes."""
        publishing = self.publisher.batch(batch_id) if self.publisher else nullcontext()
        with publishing as publisher:  # the live pointer held while the tasks publish
            planned = self.run(batch, batch_id, ends, committed, publisher)
        # Every partition's share is published before the commit: a replay finds it.
        if planned.published:
            crash_point("published", batch_id)
        return Written(
            planned.input_rows,
            planned.dead_letters,
            shares=planned.shares,
            state_versions=planned.state_versions,
        )

    def close(self) -> None:
        """Close the publisher's clients."""
        if self.publisher is not None:
            self.publisher.close()

    def run(
        self,
        batch: DataFrame,
        batch_id: int,
        ends: dict[str, Any],
        committed: int | None,
        publisher: PartitionPublisher | None = None,
    ) -> PlannedChanges:
        """Run batch ``batch_id`` (the source's raw records, ending at ``ends``) on the
        executors, from the state the table's last commit (``committed``) records; the tasks
        publish their changes with ``publisher``."""
        self._check_partitions(ends)
        versions = self._versions_as_of(committed)
        writer = self.table.share_writer()
        task = PartitionTask(
            plan=self.plan,
            table_schema=self.schema,
            state_root=str(self.deployment.state_path),
            versions=versions,
            batch_id=batch_id,
            ends={t: {int(p): int(e) for p, e in parts.items()} for t, parts in ends.items()},
            whole=not self.partitions.by_partition,
            writer=writer,
            dead=self.dead_letters.files,
            publisher=publisher,
            client=self.client,
        )
        schema = result_schema(writer.key_type)
        context = batch.sparkSession.sparkContext
        groups = self._groups(batch_id, ends, context.defaultParallelism)
        if self.regroups:
            buckets = self.partitions.count
            first = replace(task, publisher=None, buckets=buckets)
            second = GroupTask(
                self.plan, self.schema, task.state_root, versions, batch_id, writer, publisher
            )
            result = run_regrouped(context, groups, first, second, buckets, schema)
        else:
            result = run_tasks(context, groups, task, schema)
        written = dict(versions)
        for partition in result["state_partition"].to_pylist():
            written[partition] = batch_id
        dead = result.select([DEAD_PREFIX + name for name in ENTRY_SCHEMA.names])
        dead = dead.rename_columns(ENTRY_SCHEMA.names).filter(dead[DEAD_PREFIX + "path"].is_valid())
        shares = result.select(share_schema(writer.key_type).names)
        rows = sum(result["input_rows"].to_pylist())
        published = sum(result["published"].to_pylist())
        return PlannedChanges(shares, dead, rows, written, published)

    def _groups(
        self, batch_id: int, ends: Mapping[str, Mapping[str, int]], cores: int
    ) -> list[tuple[PartitionRange, ...]]:
        """The batch's offset ranges, packed into tasks: a state partition's ranges (partition
        ``p`` of every input) stay together, in one task per core at most, and a batch of few
        records in one task; a plan whose state does not split by partition, in one task."""
        start = self.deployment.checkpoint.batch_start_offsets(batch_id)
        ranges = off.plan_ranges(start, off.from_spark(ends))
        tasks = cores if self.partitions.by_partition else 1
        return off.pack_ranges(ranges, tasks, off.MIN_TASK_RECORDS, copartition=True)

    def committed(self, batch_id: int, written: Written) -> None:
        """The table committed ``batch_id`` with the state versions it wrote."""
        self._versions = (batch_id, dict(written.state_versions or {}))

    def _versions_as_of(self, committed: int | None) -> dict[int, int]:
        """The state versions the table's last commit records (read once, then followed)."""
        if self._versions is None or self._versions[0] != committed:
            last = latest_commit(self.deployment.table_path) if committed is not None else None
            if last is not None and last.batch_id != committed:
                msg = f"the table's last commit is batch {last.batch_id}, not {committed}"
                raise RunError(msg)
            if last is not None and last.state_versions is None:
                raise RunError(_undivided(self.deployment))
            self._versions = (committed, dict(last.state_versions or {}) if last else {})
        return dict(self._versions[1])

    def _check_partitions(self, ends: Mapping[str, Mapping[str, int]]) -> None:
        """A plan's inputs keep their partitions: a key's partition, and the state split by it,
        depend on the partition count."""
        sets = {topic: set(parts) for topic, parts in ends.items()}
        if self._partition_sets is None:
            last = latest_commit(self.deployment.table_path)
            self._partition_sets = (
                {t: set(map(str, p)) for t, p in last.end_offsets.items()} if last else sets
            )
        for topic, parts in sets.items():
            before = self._partition_sets.get(topic)
            if before is not None and parts != before:
                msg = (
                    f"input {topic!r} now has partitions {sorted(parts, key=int)} where the "
                    f"table was built from {sorted(before, key=int)}: keys moved between "
                    "partitions, so the state split by partition no longer holds; deploy a new "
                    "version that reprocesses the inputs"
                )
                raise RunError(msg)
        self._partition_sets = sets


def refuse_undivided_state(deployment: Deployment) -> None:
    """A deployment whose state an earlier release kept as one store on the driver cannot be
    resumed by executors."""
    root = deployment.state_path
    if root.is_dir() and any(p.suffix == ".kst" for p in root.iterdir()):
        raise RunError(_undivided(deployment))


def _undivided(deployment: Deployment) -> str:
    return (
        f"{deployment.id}: its operator state was written by an earlier release as one store on "
        "the driver, which the executors do not read; deploy a new version (it rebuilds the "
        "state from the log beside this one)"
    )
