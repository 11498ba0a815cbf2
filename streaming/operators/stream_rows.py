"""A stream's records as rows, one per record, keyed by where the record was read.

The rows of a stream that is filtered, mapped, re-keyed or routed to other topics: nothing is
combined, so nothing depends on event time and nothing is late. A row's key is its record's
(partition, offset), in two columns the plan names, so every record keeps its own row and a
replayed record (below the clock's position) is skipped. The output only grows: rows are never
corrected or deleted (:attr:`StreamRows.appends`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

import pyarrow as pa

from streaming.operators.batch import OFFSET, PARTITION, Batch, value_columns
from streaming.operators.changes import no_changes, upserts
from streaming.operators.errors import OperatorConfigError
from streaming.operators.keyed_input import KeyedInput
from streaming.operators.step import Step
from streaming.state import State


@dataclass(frozen=True, repr=False)
class StreamRows(KeyedInput):
    """Every record of ``source`` as a row: ``position`` (the record's partition, int32, and
    offset, int64) then the record's user columns. ``key_columns`` is the input's record key,
    which a state split by input partition follows."""

    position: tuple[str, str] = ("partition", "offset")

    described_as: ClassVar[str] = "a stream's rows"
    # Rows are only ever added: a filter leaves a row out instead of deleting it.
    appends: ClassVar[bool] = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if len(self.position) != 2 or len(set(self.position)) != 2 or not all(self.position):
            msg = "position names two columns: the partition's and the offset's"
            raise OperatorConfigError(msg)

    def __repr__(self) -> str:
        return f"StreamRows(source={self.source!r}, position={self.position!r})"

    @property
    def key(self) -> tuple[str, ...]:
        return self.position

    def output_schema(self, inputs: Mapping[str, pa.Schema]) -> pa.Schema:
        records = inputs[self.source.name]
        names = value_columns(records.empty_table())
        taken = [name for name in self.position if name in names]
        if taken:
            msg = f"position columns {taken} are already columns of the records ({names}); "
            msg += "name others with rows(position=(..., ...))"
            raise OperatorConfigError(msg)
        partition, offset = self.position
        fields = [pa.field(partition, pa.int32()), pa.field(offset, pa.int64())]
        return pa.schema([*fields, *(records.field(name) for name in names)])

    def step(self, state: State, batch: Batch) -> Step:
        arrivals, transition = self.begin(state, batch, grace_ms=None)
        schema = self.output_schema({self.source.name: batch.records[self.source.name].schema})
        records = arrivals.records[self.source.name]
        if records.num_rows == 0:
            changes = no_changes(schema)
        else:
            partition, offset = self.position
            rows = records.append_column(partition, records.column(PARTITION))
            rows = rows.append_column(offset, records.column(OFFSET))
            changes = upserts(rows.select(schema.names).cast(schema))
        return Step(transition.state, changes, arrivals.dead_letters, transition.delta())
