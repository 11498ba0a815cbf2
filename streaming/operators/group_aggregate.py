"""Unwindowed aggregation: typed aggregates per key over every record of a stream.

Nothing depends on event time, so nothing is late; the state holds one partial row per key,
like the output table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pyarrow as pa

from streaming.operators.aggregations import (
    Aggregation,
    check_aggregations,
    finals,
    merge_partials,
    record_partials,
)
from streaming.operators.batch import Batch, Source
from streaming.operators.changes import no_changes, upserts
from streaming.operators.errors import OperatorConfigError
from streaming.operators.event_time import CLOCK, arrive, empty_clock
from streaming.operators.folding import fold
from streaming.operators.step import Step
from streaming.operators.tables import Transition
from streaming.state import State

GROUPS = "groups"


@dataclass(frozen=True)
class GroupAggregate:
    """Aggregates per key of a stream input.

    Attributes:
        source: the input.
        key_columns: the grouping columns (the output key).
        aggregations: output column name -> aggregation, e.g. ``{"total": Sum("amount")}``.
    """

    source: Source
    key_columns: tuple[str, ...]
    aggregations: Mapping[str, Aggregation]

    def __post_init__(self) -> None:
        if not self.key_columns:
            msg = "an aggregation needs at least one key column"
            raise OperatorConfigError(msg)
        check_aggregations(self.aggregations, self.key_columns)

    @property
    def inputs(self) -> tuple[str, ...]:
        return (self.source.name,)

    @property
    def partitioned_by(self) -> dict[str, tuple[str, ...]]:
        """Per input, the columns this operator keeps and combines its records by: a state split
        by input partition holds all of a key's records when each input is keyed by them."""
        return {self.source.name: self.key_columns}

    @property
    def key(self) -> tuple[str, ...]:
        return self.key_columns

    def initial_state(self) -> State:
        return {CLOCK: empty_clock()}

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
        arrivals = arrive(state.get(CLOCK), batch, [self.source], grace_ms=None)
        transition = Transition(state)
        transition.replace(CLOCK, arrivals.clock, arrivals.clock_delta)
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
