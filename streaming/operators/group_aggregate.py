"""Unwindowed aggregation: typed aggregates per key over every record of a stream.

Nothing depends on event time, so nothing is late; the state holds one partial row per key,
like the output table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

import pyarrow as pa

from streaming.operators.aggregations import (
    Aggregation,
    check_aggregations,
    finals,
    merge_partials,
    record_partials,
)
from streaming.operators.batch import Batch
from streaming.operators.changes import no_changes, upserts
from streaming.operators.folding import fold
from streaming.operators.keyed_input import KeyedInput
from streaming.operators.step import Step
from streaming.state import State

GROUPS = "groups"


@dataclass(frozen=True)
class GroupAggregate(KeyedInput):
    """Aggregates per key of a stream input.

    Attributes:
        source: the input.
        key_columns: the grouping columns (the output key).
        aggregations: output column name -> aggregation, e.g. ``{"total": Sum("amount")}``.
    """

    aggregations: Mapping[str, Aggregation]

    described_as: ClassVar[str] = "an aggregation"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_aggregations(self.aggregations, self.key_columns)

    def output_schema(self, inputs: Mapping[str, pa.Schema]) -> pa.Schema:
        source = inputs[self.source.name]
        partials = record_partials(source.empty_table(), self.aggregations, list(self.key_columns))
        return pa.table(
            {
                **{name: partials.column(name) for name in self.key_columns},
                **finals(partials, self.aggregations, source),
            }
        ).schema

    def step(self, state: State, batch: Batch) -> Step:
        arrivals, transition = self.begin(state, batch, grace_ms=None)
        records = arrivals.records[self.source.name]
        source_schema = batch.records[self.source.name].schema
        key = list(self.key_columns)
        partials = record_partials(records, self.aggregations, key)
        batch_partials = merge_partials(partials, key, self.aggregations)
        merged = fold(transition, GROUPS, key, batch_partials, self.aggregations)
        rows = pa.table(
            {
                **{name: merged.column(name) for name in key},
                **finals(merged, self.aggregations, source_schema),
            }
        )
        changes = upserts(rows) if rows.num_rows else no_changes(rows.schema)
        return Step(transition.state, changes, arrivals.dead_letters, transition.delta())
