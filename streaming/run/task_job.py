"""A plan's micro-batch as one Spark job over offset ranges, without a DataFrame.

The driver knows the batch's offset ranges (its start and end in the checkpoint), packs them
into tasks, one state partition never split (``streaming.kafka.offsets.pack_ranges``), and runs
the tasks as an RDD job: each task reads its own ranges from Kafka, computes, writes its files and
returns one small result row per state partition (``streaming.run.partition_task``). Neither
the streaming query's rows nor a SQL plan is involved, so a batch pays for one Python stage and
no query planning: with many deployments in one engine, that per-batch cost is what the
machine spends most of its time on. A regrouping plan's partials go through an RDD shuffle by
bucket to its second stage (``streaming.run.group_task``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import pyarrow as pa
import pyarrow.compute as pc
from pyspark import SparkContext

from streaming.kafka.offsets import PartitionRange

TaskFunction = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]


def ranges_batch(ranges: Iterable[PartitionRange]) -> pa.RecordBatch:
    """A task's offset ranges as rows (``topic, partition, start, end``), what it reads."""
    rows = [r for r in ranges if r.count > 0]
    return pa.RecordBatch.from_pydict(
        {
            "topic": pa.array([r.topic for r in rows], pa.string()),
            "partition": pa.array([r.partition for r in rows], pa.int32()),
            "start": pa.array([r.start for r in rows], pa.int64()),
            "end": pa.array([r.end for r in rows], pa.int64()),
        }
    )


def run_tasks(
    context: SparkContext,
    groups: list[tuple[PartitionRange, ...]],
    task: TaskFunction,
    schema: pa.Schema,
) -> pa.Table:
    """Run ``task`` once per group of ranges; their result rows, as one table."""
    if not groups:
        return schema.empty_table()
    inputs = [ranges_batch(group) for group in groups]
    batches = context.parallelize(inputs, len(inputs)).mapPartitions(task).collect()
    return _table(batches, schema)


def run_regrouped(
    context: SparkContext,
    groups: list[tuple[PartitionRange, ...]],
    first: TaskFunction,
    second: TaskFunction,
    buckets: int,
    schema: pa.Schema,
) -> pa.Table:
    """Run ``first`` per group of ranges, shuffle its rows by their ``bucket`` column (rows
    without one pass through any bucket), then ``second`` per bucket."""
    if not groups:
        return schema.empty_table()
    inputs = [ranges_batch(group) for group in groups]
    staged = context.parallelize(inputs, len(inputs)).mapPartitions(first).flatMap(_by_bucket)
    shuffled = staged.partitionBy(buckets, lambda bucket: bucket)
    batches = shuffled.mapPartitions(lambda pairs: second(b for _, b in pairs)).collect()
    return _table(batches, schema)


def _by_bucket(batch: pa.RecordBatch) -> Iterator[tuple[int, pa.RecordBatch]]:
    table = pa.Table.from_batches([batch])
    column = table.column("bucket")
    for bucket in set(column.to_pylist()):
        if bucket is None:
            rows = table.filter(column.is_null())
        else:
            rows = table.filter(pc.equal(column, bucket))
        for piece in rows.to_batches():
            yield (0 if bucket is None else int(bucket)), piece


def _table(batches: list[pa.RecordBatch], schema: pa.Schema) -> pa.Table:
    if not batches:
        return schema.empty_table()
    return pa.Table.from_batches(batches).cast(schema)
