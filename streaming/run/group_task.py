"""The second half of a regrouping plan's micro-batch (``streaming.define.chaining``), run as
Spark tasks after a shuffle by bucket of groups.

The first half runs where the inputs' partitions are (``streaming.run.partition_task`` with
``buckets``): each state partition runs the first plan and works out what its changed rows move
between groups, and returns those partials split into buckets by a stable hash of the group key,
next to its usual result row. Spark shuffles the rows by bucket; here each bucket's partials
(from every input partition, in partition order) are folded into the bucket's own state
partition of groups, whose changes are the table's share, written from the task like any other.
So the groups spread over as many tasks as the inputs have partitions, and a group's state is
always in its bucket's store, whatever executor runs it.

The first half's result rows pass through unchanged, so the driver collects one result per
state partition of either half, and commits their versions together: a batch whose commit never
happened is computed again from the committed versions of both halves.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from streaming.define.plan import Plan
from streaming.delta.data_files import ShareWriter
from streaming.delta.dead_letters import ENTRY_SCHEMA
from streaming.deployment.record import group_state, state_partition_path
from streaming.operators import regrouping
from streaming.run.partition_publisher import PartitionPublisher
from streaming.run.partition_task import (
    DEAD_PREFIX,
    STATE_FIELDS,
    from_ipc,
    held_state,
    keep_state,
    result_schema,
)
from streaming.state import StateStore


@dataclass(frozen=True)
class GroupTask:
    """What every task of a batch's second half needs; small and picklable."""

    plan: Plan
    table_schema: pa.Schema
    state_root: str
    versions: Mapping[int, int]
    batch_id: int
    writer: ShareWriter
    publisher: PartitionPublisher | None = None

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        received = [b for b in batches if b.num_rows]
        if not received:
            return
        if self.publisher is not None:
            self.publisher.prepare()  # the host starts while the buckets fold
        rows = pa.Table.from_batches(received)
        schema = result_schema(self.writer.key_type)
        passed = rows.filter(pc.is_null(rows["bucket"]))
        if passed.num_rows:
            yield from passed.select(schema.names).cast(schema).to_batches()
        moved = rows.filter(pc.is_valid(rows["bucket"]))
        for bucket in sorted(pc.unique(moved["bucket"]).to_pylist()):
            mine = moved.filter(pc.equal(moved["bucket"], bucket)).sort_by("state_partition")
            parts = pa.concat_tables([from_ipc(data) for data in mine["moved"].to_pylist()])
            yield from self.run_bucket(bucket, parts).cast(schema).to_batches()

    def run_bucket(self, bucket: int, moved: pa.Table) -> pa.Table:
        """Fold one bucket's moved partials into its groups; returns its result row."""
        partition = group_state(bucket)
        store = StateStore(state_partition_path(self.state_root, partition))
        committed = self.versions.get(partition)
        state = held_state(store, self.state_root, partition, committed, dict)  # no groups yet
        step = regrouping(self.plan.operator).downstream(state, moved)
        keep_state(store, self.state_root, partition, self.batch_id, committed, step)
        changes = self.plan.finish(step.changes, self.table_schema)
        published = 0
        if self.publisher is not None:  # before the commit: a replay finds it published
            published = self.publisher.publish(partition, changes)
        row = self.writer.write(changes, self.batch_id)
        for field, value in zip(
            STATE_FIELDS, [partition, self.batch_id, 0, published], strict=True
        ):
            row = row.append_column(field, pa.array([value], field.type))
        for field in ENTRY_SCHEMA:
            row = row.append_column(DEAD_PREFIX + field.name, pa.nulls(1, field.type))
        return row
