"""Compaction: the latest value per key, as a Kafka compacted topic keeps it.

Per key, the record with the highest (partition, offset) wins; a tombstone deletes the key and a
record that wins later re-creates it. Nothing depends on event time, so nothing is late. The
state keeps, per key, the (partition, offset) of the current winner, tombstones included (a
lower record arriving later must not resurrect a deleted key), so it grows with the number of
keys ever seen, as the table does. With ``position``, each row also holds its record's
(partition, offset), in columns of those names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pyarrow as pa

from streaming.operators.batch import DELETE, OFFSET, PARTITION, Batch, Source, value_columns
from streaming.operators.changes import combine, deletes, no_changes, upserts
from streaming.operators.errors import OperatorConfigError
from streaming.operators.keyed_input import KeyedInput
from streaming.operators.step import Step
from streaming.operators.tables import supersede
from streaming.state import State

WINNERS = "winners"


@dataclass(frozen=True, repr=False)
class Compaction(KeyedInput):
    """Latest value per key of a changelog input.

    Attributes:
        source: the input (``changelog=True`` lets tombstones delete).
        key_columns: the record key's columns.
        columns: the value columns to keep (default: every user column).
        position: the names of two more columns holding each row's record partition (int32)
            and offset (int64); None for none.
    """

    columns: tuple[str, ...] | None = None
    position: tuple[str, str] | None = None

    described_as: ClassVar[str] = "compaction"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.position is not None and (len(self.position) != 2 or len(set(self.position)) != 2):
            msg = "position names two columns: the partition's and the offset's"
            raise OperatorConfigError(msg)

    def __repr__(self) -> str:
        # Part of a plan's fingerprint: without a position it is what it always was.
        fields = f"source={self.source!r}, key_columns={self.key_columns!r}"
        fields += f", columns={self.columns!r}"
        if self.position is not None:
            fields += f", position={self.position!r}"
        return f"Compaction({fields})"

    def output_schema(self, inputs: Mapping[str, pa.Schema]) -> pa.Schema:
        records = inputs[self.source.name]
        values = self.columns or [
            name for name in value_columns(records.empty_table()) if name not in self.key_columns
        ]
        names = [*self.key_columns, *[v for v in values if v not in self.key_columns]]
        schema = pa.schema([records.field(name) for name in names])
        if self.position is None:
            return schema
        taken = [name for name in self.position if name in names]
        if taken:
            msg = f"position columns {taken} are already columns of the rows ({names})"
            raise OperatorConfigError(msg)
        partition, offset = self.position
        return schema.append(pa.field(partition, pa.int32())).append(pa.field(offset, pa.int64()))

    def step(self, state: State, batch: Batch) -> Step:
        arrivals, transition = self.begin(state, batch, grace_ms=None)
        schema = self.output_schema({self.source.name: batch.records[self.source.name].schema})
        records = arrivals.records[self.source.name]
        if records.num_rows == 0:
            return Step(
                transition.state, no_changes(schema), arrivals.dead_letters, transition.delta()
            )
        source = self.source

        def stored(winners: pa.Table) -> pa.Table:
            rows = winners.select([*self.key_columns, PARTITION, OFFSET])
            return rows.append_column(DELETE, pa.array(_tombstones(winners, source)))

        winners, _ = supersede(
            transition, WINNERS, self.key_columns, records, [PARTITION, OFFSET], stored
        )
        if self.position is not None:
            for name, column in zip(self.position, (PARTITION, OFFSET), strict=True):
                winners = winners.append_column(name, winners.column(column))
        tombstone = _tombstones(winners, self.source)
        changes = combine(
            [
                upserts(winners.filter(~tombstone).select(schema.names)),
                deletes(winners.filter(tombstone).select(list(self.key_columns)), schema),
            ],
            schema,
        )
        return Step(transition.state, changes, arrivals.dead_letters, transition.delta())


def _tombstones(records: pa.Table, source: Source) -> np.ndarray:
    if not source.changelog:
        return np.zeros(records.num_rows, dtype=bool)
    return records.column(DELETE).fill_null(False).to_numpy(zero_copy_only=False)
