"""A plan over another plan's table: the first plan's changes feed a second operator.

``plan.group_by(...)`` builds one. Each batch runs the first plan (its operator, then its
columns and filter) and hands the changes of its table, keyed by its key, to the second
operator. Those changes are exactly how the first table moved between the two log prefixes, so
the second table, a function of the first table, is exact at every commit too, and a chain can
be chained again.

The second operator groups by other columns than the inputs' Kafka keys (it re-keys), so a batch
runs in two halves when the first plan's state splits by input partition: :meth:`Chained.upstream`
per input partition (the first plan, and each changed row's contribution taken out of its old
group and added to its new one, as partials per group), then a shuffle of those partials by
bucket of groups (:meth:`Chained.buckets`, a stable hash of the group key), then
:meth:`Chained.downstream` per bucket (the groups). That is Kafka Streams' repartition topic,
as a Spark shuffle inside the micro-batch: it adds no log and no exactly-once hop, and the
table, committed with both halves' state versions, is still exact at every commit
(``streaming.run.group_task``). A chain over a chain runs whole, as one state partition.

State: the first plan's tables under ``first.``, the second operator's under ``then.``: the rows'
contributions (``then.rows``) with the first half, the groups (``then.groups``) with the second.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

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

    @property
    def partitioned_by(self) -> dict[str, tuple[str, ...]] | None:
        """The first plan's, when its state splits by input partition: the first half of a
        batch then runs per input partition, and the groups per bucket (:meth:`buckets`)."""
        if isinstance(self.first.operator, Chained):
            return None
        declared = self.first.operator.partitioned_by
        return None if declared is None else dict(declared)

    def step(self, state: State, batch: Batch) -> Step:
        rows = self.upstream(state, batch)
        groups = self.downstream(rows.state, rows.changes)
        delta = {**rows.delta, **groups.delta}
        return Step(groups.state, groups.changes, rows.dead_letters, delta)

    def upstream(self, state: State, batch: Batch) -> Step:
        """Where the inputs' partitions are: the first plan, then what its changed rows move
        between groups (the result's ``changes``: partials per group, to :meth:`downstream`)."""
        first = self.first.operator.step(_part(FIRST, state), batch)
        changes = self.first.finish(first.changes, self.first.table_schema())
        moved = self.then.contribute(_part(THEN, state), changes)
        return Step(
            state={**state, **_under(FIRST, first.state), **_under(THEN, moved.state)},
            changes=moved.changes,
            dead_letters=first.dead_letters,
            delta={**_under(FIRST, first.delta), **_under(THEN, moved.delta)},
        )

    def downstream(self, state: State, moved: pa.Table) -> Step:
        """Where the groups are: fold the partials :meth:`upstream` moved into them."""
        groups = self.then.fold(_part(THEN, state), moved, self._rows_schema())
        return Step(
            state={**state, **_under(THEN, groups.state)},
            changes=groups.changes,
            dead_letters=groups.dead_letters,
            delta=_under(THEN, groups.delta),
        )

    def buckets(self, moved: pa.Table, count: int) -> dict[int, pa.Table]:
        """``moved`` split into ``count`` buckets by group (a stable hash of the group key), so
        every batch sends a group's partials to the same bucket, and its state."""
        if moved.num_rows == 0:
            return {}
        keys = moved.select(list(self.key)).to_pylist()
        numbers = [zlib.crc32(repr(tuple(k.values())).encode()) % count for k in keys]
        column = pa.array(numbers, pa.int32())
        return {int(b): moved.filter(pc.equal(column, b)) for b in pc.unique(column).to_pylist()}

    def _rows_schema(self) -> pa.Schema:
        schema = self.first.table_schema()
        return schema.append(pa.field(DELETE, pa.bool_(), nullable=False))


def _under(prefix: str, tables: Mapping[str, object]) -> dict:
    return {prefix + name: table for name, table in tables.items()}


def _part(prefix: str, state: State) -> State:
    return {name[len(prefix) :]: t for name, t in state.items() if name.startswith(prefix)}
