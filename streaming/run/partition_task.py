"""One state partition of a stateful plan, run as part of a Spark task on an executor.

A task of a plan's micro-batch reads the raw records of one or more input partition numbers (the
Kafka source puts partition ``p`` of every input in the same task). The source hands it only the
offset ranges (``rangesOnly``) and the task reads them from Kafka itself, so the records go from
the broker to the Python process that computes on them without a pass through the JVM. For each
partition number it holds records of, it decodes them per topic, runs the plan's operator on
them with the state of that partition, writes the state's changes to the partition's store,
writes the table's changes as one data file and the partition's dead letters as another, and
returns one small row: the files' entries, the changed keys (about 30 bytes a change) and the
state's new version. A plan that publishes its changes sends the partition's share from here
too. Neither the records nor the output rows leave the executor.

The state of a partition is kept between batches in this Python worker (``_HELD``), at the
version the task wrote. A task given the partition's committed version loads it from the store,
replaying only the changelogs after the version this worker holds, or in full from the newest
snapshot when it holds none: so a partition can move to any executor, and a batch whose commit
failed is redone from the committed state.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from streaming.define.plan import Plan
from streaming.define.topic import Topic
from streaming.delta.data_files import ShareWriter, share_schema
from streaming.delta.dead_letters import ENTRY_SCHEMA, LETTER_SCHEMA, DeadLetterFiles
from streaming.deployment.record import WHOLE_STATE, state_partition_path
from streaming.errors import RunError
from streaming.kafka.offsets import PartitionRange
from streaming.kafka.reader import arrow_schema, kept_record_schema, read_ranges
from streaming.kafka.value_decoder import ValueDecoder
from streaming.operators import Batch, Step, regrouping
from streaming.operators.changes import no_changes
from streaming.run.partition_publisher import PartitionPublisher
from streaming.state import State, StateStore

RAW_SCHEMA = kept_record_schema()
RAW_COLUMNS = tuple(RAW_SCHEMA.names)
STATE_FIELDS = [
    pa.field("state_partition", pa.int32()),
    pa.field("state_version", pa.int64()),
    pa.field("input_rows", pa.int64()),
    pa.field("published", pa.int64()),  # records sent to the published topic
]
DEAD_PREFIX = "dead_"
# A regrouping plan's first half also returns, per bucket of groups, what its rows moved.
MOVED_FIELDS = [pa.field("bucket", pa.int32()), pa.field("moved", pa.binary())]


def result_schema(key_type: pa.DataType) -> pa.Schema:
    """One row per state partition a task ran: its table share, state and dead letters."""
    dead = [pa.field(DEAD_PREFIX + f.name, f.type) for f in ENTRY_SCHEMA]
    return pa.schema([*share_schema(key_type), *STATE_FIELDS, *dead])


def staged_schema(key_type: pa.DataType) -> pa.Schema:
    """The first half's rows: a result row per state partition (``bucket`` null) and a row per
    (state partition, bucket) carrying the moved partials as Arrow IPC (``moved``)."""
    return pa.schema([*result_schema(key_type), *MOVED_FIELDS])


# This worker's state per (state root, partition): (the batch it reflects, the state).
_HELD: dict[tuple[str, int], tuple[int, State]] = {}
_LOCK = threading.Lock()


@dataclass(frozen=True)
class PartitionTask:
    """What every task of one batch needs; small and picklable (Spark ships it to the tasks).

    ``versions`` maps a state partition to the batch its committed state reflects (absent: no
    state yet); ``ends`` is the batch's end offsets per topic and partition.
    """

    plan: Plan
    table_schema: pa.Schema
    state_root: str
    versions: Mapping[int, int]
    batch_id: int
    ends: Mapping[str, Mapping[int, int]]
    whole: bool
    writer: ShareWriter
    dead: DeadLetterFiles
    publisher: PartitionPublisher | None = None  # when the batch's changes are published
    # A regrouping plan's first half (``streaming.run.group_task``): the moved partials go to
    # this many buckets instead of the table.
    buckets: int = 0
    # The Kafka client settings, when the source hands the task offset ranges to read.
    client: Mapping[str, str] | None = None

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        received = [b for b in batches if b.num_rows]
        if not received:
            return
        if self.publisher is not None:
            self.publisher.prepare()  # the host starts while the partitions compute
        raw = self._records(pa.Table.from_batches(received))
        if raw.num_rows == 0:
            return
        if self.whole:
            groups = {WHOLE_STATE: raw}
        else:
            numbers = pc.unique(raw["partition"]).to_pylist()
            groups = {p: raw.filter(pc.equal(raw["partition"], p)) for p in sorted(numbers)}
        if self.buckets:
            schema = staged_schema(self.writer.key_type)
        else:
            schema = result_schema(self.writer.key_type)
        if self.publisher is not None and len(groups) > 1:
            # A partition's publish mostly waits on the broker (its transaction's commit, through
            # the executor's publisher host), so the task's partitions run side by side rather
            # than one wait after another.
            with ThreadPoolExecutor(len(groups), thread_name_prefix="partition") as pool:
                rows = list(pool.map(lambda item: self.run_partition(*item), groups.items()))
        else:
            rows = [self.run_partition(p, records) for p, records in groups.items()]
        for row in rows:
            yield from row.cast(schema).to_batches()

    def _records(self, rows: pa.Table) -> pa.Table:
        """The task's records: ``rows`` themselves, or read from the ranges they list."""
        if "start" not in rows.column_names:
            return normalized(rows)
        if self.client is None:
            msg = "the source hands the task offset ranges, but the task has no Kafka client"
            raise RunError(msg)
        ranges = [
            PartitionRange(topic, partition, start, end)
            for topic, partition, start, end in zip(
                *(rows[c].to_pylist() for c in ("topic", "partition", "start", "end")),
                strict=True,
            )
        ]
        read = list(read_ranges(self.client, ranges))
        return normalized(pa.Table.from_batches(read, schema=arrow_schema(False)))

    def run_partition(self, partition: int, raw: pa.Table) -> pa.Table:
        """Apply this batch's records of one partition; returns its result row (and, in a
        regrouping plan's first half, its rows of moved partials)."""
        store = StateStore(state_partition_path(self.state_root, partition))
        committed = self.versions.get(partition)
        state = held_state(
            store, self.state_root, partition, committed, self.plan.operator.initial_state
        )
        records: dict[str, pa.Table] = {}
        bad: list[pa.Table] = []
        for topic in self.plan.inputs:
            mine = raw.filter(pc.equal(raw["topic"], topic.name))
            good, dead = decode(topic, decoder_of(topic), mine)
            records[topic.name] = good
            bad.append(dead)
        ends = {t.name: self._ends(t.name, partition) for t in self.plan.inputs}
        batch = Batch(records, ends)
        if self.buckets:
            step = regrouping(self.plan.operator).upstream(state, batch)
        else:
            step = self.plan.operator.step(state, batch)
        keep_state(store, self.state_root, partition, self.batch_id, committed, step)
        if self.buckets:
            changes = no_changes(self.table_schema)
        else:
            changes = self.plan.finish(step.changes, self.table_schema)
        published = 0
        if self.publisher is not None:  # before the commit: a replay finds it published
            published = self.publisher.publish(partition, changes)
        row = self.writer.write(changes, self.batch_id)
        letters = pa.concat_tables(
            [piece.cast(LETTER_SCHEMA) for piece in [*bad, late_records(raw, step.dead_letters)]]
        )
        entry = self.dead.write(letters, self.batch_id)
        values = [partition, self.batch_id, raw.num_rows, published]
        for field, value in zip(STATE_FIELDS, values, strict=True):
            row = row.append_column(field, pa.array([value], field.type))
        for field in ENTRY_SCHEMA:
            value = entry[field.name] if entry.num_rows else pa.nulls(1, field.type)
            row = row.append_column(DEAD_PREFIX + field.name, value)
        if not self.buckets:
            return row
        row = row.append_column(MOVED_FIELDS[0], pa.nulls(1, pa.int32()))
        row = row.append_column(MOVED_FIELDS[1], pa.nulls(1, pa.binary()))
        return pa.concat_tables([row, *self._moved(partition, step.changes, row.schema)])

    def _moved(self, partition: int, moved: pa.Table, schema: pa.Schema) -> list[pa.Table]:
        """One row per bucket of groups the partition's rows moved partials into."""
        rows = []
        buckets = regrouping(self.plan.operator).buckets(moved, self.buckets)
        for bucket, part in sorted(buckets.items()):
            values = {"state_partition": partition, "bucket": bucket, "moved": to_ipc(part)}
            columns = [pa.array([values.get(f.name)], f.type) for f in schema]
            rows.append(pa.Table.from_arrays(columns, schema=schema))
        return rows

    def _ends(self, topic: str, partition: int) -> dict[int, int]:
        ends = self.ends.get(topic, {})
        if partition == WHOLE_STATE:
            return {int(p): int(e) for p, e in ends.items()}
        return {partition: int(ends[partition])} if partition in ends else {}


def held_state(
    store: StateStore,
    root: str,
    partition: int,
    committed: int | None,
    initial: Callable[[], State],
) -> State:
    """A state partition's committed state: held by this worker, caught up, or loaded
    (``initial()`` when nothing is committed)."""
    with _LOCK:
        held = _HELD.get((root, partition))
    if committed is None:
        store.load(None)
        return initial()
    if held is not None and held[0] == committed:
        store.load(committed, held)  # positions the store; reads nothing
        return held[1]
    known = held if held is not None and held[0] < committed else None
    return store.load(committed, known)


def keep_state(
    store: StateStore, root: str, partition: int, batch_id: int, committed: int | None, step: Step
) -> None:
    """Write the partition's state after ``batch_id`` and hold it in this worker."""
    store.write(batch_id, step.delta, step.state)
    if committed is not None:
        store.collect_garbage(committed)
    with _LOCK:
        _HELD[(root, partition)] = (batch_id, step.state)


def to_ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def from_ipc(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(data).read_all()


def normalized(raw: pa.Table) -> pa.Table:
    """The source's columns with fixed types (Spark may hand large binary/string types over, and
    non-null flags), so every piece of a batch concatenates and decodes alike."""
    return raw.select(list(RAW_COLUMNS)).cast(RAW_SCHEMA)


def decoder_of(topic: Topic) -> ValueDecoder:
    return ValueDecoder(topic.value_schema, topic.required, topic.changelog)


def decode(topic: Topic, decoder: ValueDecoder, raw: pa.Table) -> tuple[pa.Table, pa.Table]:
    """The records of one topic as the operator reads them, and the ones that do not decode."""
    keys = raw.column("key").combine_chunks()
    values = raw.column("value").combine_chunks()
    decoded = decoder.decode(keys, values)
    ok = decoded.error.is_null()
    dead = raw.select(list(RAW_COLUMNS)).filter(pc.invert(ok))
    dead = dead.append_column("error", decoded.error.filter(pc.invert(ok)))

    # Most batches decode whole: then nothing is copied to drop their bad records.
    def good(data: pa.Array | pa.Table) -> pa.Array | pa.Table:
        return data if dead.num_rows == 0 else data.filter(ok)

    value = good(decoded.value)
    columns: dict[str, pa.Array] = {topic.key: good(keys).cast(pa.string())}
    for field in topic.fields:
        if field.name != topic.key:
            columns[field.name] = pc.struct_field(value, field.name)
    kept = good(raw.select(["partition", "offset", "timestamp"]))
    columns["_partition"] = kept.column("partition").cast(pa.int32())
    columns["_offset"] = kept.column("offset").cast(pa.int64())
    columns["_timestamp"] = kept.column("timestamp")
    if topic.changelog:
        columns["_delete"] = good(decoded.tombstone)
    return pa.table(columns), dead


def late_records(raw: pa.Table, letters: pa.Table) -> pa.Table:
    """The raw records an operator dead-lettered, with their reason as ``error``."""
    if letters.num_rows == 0:
        return LETTER_SCHEMA.empty_table()
    wanted = letters.select(["input", "partition", "offset", "reason"]).rename_columns(
        ["topic", "partition", "offset", "error"]
    )
    joined = raw.join(wanted, keys=["topic", "partition", "offset"], join_type="inner")
    assert joined.num_rows == letters.num_rows, "a dead-lettered record is not in the batch"
    return joined.select([*RAW_COLUMNS, "error"])
