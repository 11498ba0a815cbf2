"""One micro-batch of a stateful plan: decode per topic, run the operator's step with its durable
state, and hand the sink full-row changes.

The state after batch ``B`` is written to the deployment's state store under ``B`` before the
table commits ``B``. The state used for a batch is always loaded as of the table's last committed
batch, so a crash between the two writes replays ``B`` from the state before it: the store
ignores (and later removes) the files of a batch whose table commit never happened.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from streaming.define.pipeline import Pipeline
from streaming.define.plan import Plan
from streaming.define.topic import Topic
from streaming.deployment import Deployment
from streaming.kafka.reader import kept_record_schema
from streaming.kafka.value_decoder import ValueDecoder
from streaming.operators import Batch
from streaming.state import State, StateStore

RAW_SCHEMA = kept_record_schema()
RAW_COLUMNS = tuple(RAW_SCHEMA.names)
DEAD_SCHEMA = RAW_SCHEMA.append(pa.field("error", pa.string()))


@dataclass(frozen=True)
class PlannedChanges:
    """What one batch of a plan produced."""

    changes: pa.Table  # the table's columns plus ``_delete``, at most one row per key
    input_rows: int
    dead_letters: pa.Table  # raw records plus ``error`` (decode failures and late records)


class PlannedBatch:
    """Runs one deployment's plan, one micro-batch at a time, with its state store."""

    def __init__(self, pipeline: Pipeline, deployment: Deployment) -> None:
        assert pipeline.plan is not None
        self.plan: Plan = pipeline.plan
        self.schema = pipeline.table_schema
        self.store = StateStore(deployment.state_path)
        self.decoders = {topic.name: decoder_of(topic) for topic in self.plan.inputs}
        self._state: State | None = None

    def state_as_of(self, committed: int | None) -> State:
        """The operator state after the table's last committed batch."""
        if self._state is None or self.store.head != committed:
            loaded = self.store.load(committed)
            self._state = loaded if committed is not None else self.plan.operator.initial_state()
        return self._state

    def run(
        self, raw: pa.Table, batch_id: int, ends: dict[str, Any], committed: int | None
    ) -> PlannedChanges:
        """Apply one batch of raw records (the Kafka source's columns) and persist the state."""
        state = self.state_as_of(committed)
        raw = normalized(raw)
        records: dict[str, pa.Table] = {}
        bad: list[pa.Table] = []
        for topic in self.plan.inputs:
            mine = raw.filter(pc.equal(raw.column("topic"), topic.name))
            good, dead = decode(topic, self.decoders[topic.name], mine)
            records[topic.name] = good
            bad.append(dead)
        ends_by_input = {t.name: _partition_ends(ends.get(t.name, {})) for t in self.plan.inputs}
        step = self.plan.operator.step(state, Batch(records, ends_by_input))
        self.store.write(batch_id, step.delta, step.state)
        self._state = step.state
        late = late_records(raw, step.dead_letters)
        changes = self.plan.finish(step.changes, self.schema)
        dead = pa.concat_tables([piece.cast(DEAD_SCHEMA) for piece in [*bad, late]])
        return PlannedChanges(changes, raw.num_rows, dead)


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
    value = decoded.value.filter(ok)
    columns: dict[str, pa.Array] = {topic.key: keys.filter(ok).cast(pa.string())}
    for field in topic.fields:
        if field.name != topic.key:
            columns[field.name] = pc.struct_field(value, field.name)
    kept = raw.filter(ok)
    columns["_partition"] = kept.column("partition").cast(pa.int32())
    columns["_offset"] = kept.column("offset").cast(pa.int64())
    columns["_timestamp"] = kept.column("timestamp")
    if topic.changelog:
        columns["_delete"] = decoded.tombstone.filter(ok)
    return pa.table(columns), dead


def late_records(raw: pa.Table, letters: pa.Table) -> pa.Table:
    """The raw records an operator dead-lettered, with their reason as ``error``."""
    if letters.num_rows == 0:
        return DEAD_SCHEMA.empty_table()
    wanted = letters.select(["input", "partition", "offset", "reason"]).rename_columns(
        ["topic", "partition", "offset", "error"]
    )
    joined = raw.join(wanted, keys=["topic", "partition", "offset"], join_type="inner")
    assert joined.num_rows == letters.num_rows, "a dead-lettered record is not in the batch"
    return joined.select([*RAW_COLUMNS, "error"])


def _partition_ends(ends: dict[str, int]) -> dict[int, int]:
    return {int(partition): int(offset) for partition, offset in ends.items()}
