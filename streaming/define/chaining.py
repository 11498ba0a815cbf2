"""A plan over another plan's table: the first plan's changes feed a second operator.

``plan.group_by(...)`` builds one. Each batch runs the first plan (its operator, then its
columns and filter) and hands the changes of its table, keyed by its key, to the second
operator. Those changes are exactly how the first table moved between the two log prefixes, so
the second table, a function of the first table, is exact at every commit too, and a chain can
be chained again.

The second operator groups by other columns than the inputs' Kafka keys (it re-keys), so a
chained plan keeps its state as one partition (``streaming.run.copartition``): the batch runs
as one task on an executor. That is correct whatever the keys; to spread a re-keyed aggregate
over executors, split it in two pipelines through a topic keyed by the new key.

State: the first plan's tables under ``first.``, the second operator's under ``then.``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from streaming.operators import DELETE, Batch, Step
from streaming.operators.table_aggregate import TableAggregate
from streaming.state import State

if TYPE_CHECKING:
    from streaming.define.plan import Plan

FIRST = "first."
THEN = "then."
ROWS = "rows"
"""The second operator's input: the first plan's table changes."""


@dataclass(frozen=True)
class Chained:
    """The first plan's table changes, fed to ``then`` (an operator reading input ``rows``)."""

    first: Plan
    then: TableAggregate

    @property
    def inputs(self) -> tuple[str, ...]:
        return tuple(self.first.operator.inputs)

    @property
    def key(self) -> tuple[str, ...]:
        return self.then.key

    def initial_state(self) -> State:
        return {
            **_under(FIRST, self.first.operator.initial_state()),
            **_under(THEN, self.then.initial_state()),
        }

    def output_schema(self, inputs: Mapping[str, pa.Schema]) -> pa.Schema:
        return self.then.output_schema({ROWS: self._rows_schema()})

    def step(self, state: State, batch: Batch) -> Step:
        first = self.first.operator.step(_part(FIRST, state), batch)
        changes = self.first.finish(first.changes, self.first.table_schema())
        then = self.then.step(_part(THEN, state), Batch({ROWS: changes}, {}))
        return Step(
            state={**_under(FIRST, first.state), **_under(THEN, then.state)},
            changes=then.changes,
            dead_letters=first.dead_letters,
            delta={**_under(FIRST, first.delta), **_under(THEN, then.delta)},
        )

    def _rows_schema(self) -> pa.Schema:
        schema = self.first.table_schema()
        return schema.append(pa.field(DELETE, pa.bool_(), nullable=False))


def _under(prefix: str, tables: Mapping[str, object]) -> dict:
    return {prefix + name: table for name, table in tables.items()}


def _part(prefix: str, state: State) -> State:
    return {name[len(prefix) :]: t for name, t in state.items() if name.startswith(prefix)}
