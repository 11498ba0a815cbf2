"""Aggregates over a table's rows regrouped by other columns (Kafka Streams' ``KTable.groupBy``).

The input is the changes of a table keyed by ``row_key`` (at most one per row key per batch, with
``_delete``), such as another operator's output. The output is, per group, the aggregate of the
table's current rows in it, as SQL's ``GROUP BY`` over that table would give: when a row changes,
its old values leave their group and its new values join theirs, so a row whose group column
changes moves to the new group, and a group with no rows left is deleted. Taking a row back out
of its group needs aggregations that can be subtracted: ``Count``, ``Sum`` and ``Mean``.

A tumbling window groups rows by the window their time column falls in (``window_start``, epoch
ms). Rows with a null group column belong to no group (a table's key cannot be null).

State: ``rows`` (per row key, its group and its contribution's partials) and ``groups`` (per
group, the partials summed, and ``__rows``, how many rows it holds). Nothing here is late: the
input table is already an exact function of the log, and so is every group of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from streaming.operators.aggregations import (
    Aggregation,
    Count,
    Mean,
    Sum,
    check_aggregations,
    finals,
    merge_partials,
    record_partials,
)
from streaming.operators.batch import DELETE, Batch
from streaming.operators.changes import combine, deletes, no_changes, upserts
from streaming.operators.errors import BatchError, OperatorConfigError
from streaming.operators.event_time import empty_dead_letters
from streaming.operators.folding import fold
from streaming.operators.step import Step
from streaming.operators.tables import Transition, fetch
from streaming.operators.windows import START, Tumbling
from streaming.state import State

ROWS = "rows"
GROUPS = "groups"
COUNT = "__rows"
SUBTRACTABLE = (Count, Sum, Mean)


def _values(name: str) -> str:
    """A ``Sum``'s count of non-null values: the sum of none is null, as in SQL."""
    return f"{name}.values"


@dataclass(frozen=True)
class TableAggregate:
    """Aggregates per group of a table's rows (see the module docstring).

    Attributes:
        source: the input's name; its records are the table's changes.
        row_key: the input table's key columns.
        group: the grouping columns of the rows.
        aggregations: output column -> ``Count``, ``Sum`` or ``Mean``.
        window: group further by the tumbling window of ``time`` (adds ``window_start``).
        time: the rows' column holding the event time (epoch ms), with ``window``.
    """

    source: str
    row_key: tuple[str, ...]
    group: tuple[str, ...]
    aggregations: Mapping[str, Aggregation]
    window: Tumbling | None = None
    time: str | None = None

    def __post_init__(self) -> None:
        if not self.group and self.window is None:
            msg = "group by at least one column or a window"
            raise OperatorConfigError(msg)
        if (self.window is None) != (self.time is None):
            msg = "a window over a table's rows needs the column of their time: give both"
            raise OperatorConfigError(msg)
        if self.window is not None and not isinstance(self.window, Tumbling):
            msg = (
                f"group_by takes a Tumbling window, not {self.window!r}: a table's row counts "
                "in one group only"
            )
            raise OperatorConfigError(msg)
        reserved = [c for c in self.group if c.startswith("_") or c == START]
        if reserved:
            msg = f"group columns {reserved}: names starting with '_' and {START!r} are reserved"
            raise OperatorConfigError(msg)
        check_aggregations(self.aggregations, self.key)
        kept = [n for n, a in self.aggregations.items() if not isinstance(a, SUBTRACTABLE)]
        if kept:
            msg = (
                f"aggregations {kept}: over a table's rows a changed row is taken back out of its "
                "group, which only Count, Sum and Mean can undo; aggregate the stream instead"
            )
            raise OperatorConfigError(msg)

    @property
    def inputs(self) -> tuple[str, ...]:
        return (self.source,)

    @property
    def partitioned_by(self) -> None:
        """Its groups are not its input's key: run alone, its state is one partition (a chain
        runs it per bucket of groups, ``streaming.define.chaining``)."""
        return None

    @property
    def key(self) -> tuple[str, ...]:
        return (*self.group, START) if self.window is not None else self.group

    def initial_state(self) -> State:
        return {}

    def output_schema(self, inputs: Mapping[str, pa.Schema]) -> pa.Schema:
        source = inputs[self.source]
        return self._rows(self._partials(source.empty_table()), source).schema

    def step(self, state: State, batch: Batch) -> Step:
        changes = batch.records[self.source]
        moved = self.contribute(state, changes)
        folded = self.fold(moved.state, moved.changes, changes.schema)
        delta = {**moved.delta, **folded.delta}
        return Step(folded.state, folded.changes, empty_dead_letters(), delta)

    def contribute(self, state: State, changes: pa.Table) -> Step:
        """The first half of :meth:`step`, where the rows are: what the changed rows take out of
        their old groups and add to their new ones, as partials per group (``changes`` of the
        result), keeping each row's contribution (table ``rows``) for its next change."""
        key = list(self.row_key)
        transition = Transition(state)
        current = self._partials(changes.filter(pc.invert(changes.column(DELETE))))
        old = fetch(transition.table(ROWS), key, changes)
        transition.change(ROWS, key, deletes=old, inserts=current)
        parts = [current.drop_columns(key)]
        if old is not None and old.num_rows:
            parts.append(_negated(old.drop_columns(key), self.key))
        moved = merge_partials(
            pa.concat_tables(parts), list(self.key), self.aggregations, _extra(parts[0])
        )
        return Step(transition.state, moved, empty_dead_letters(), transition.delta())

    def fold(self, state: State, moved: pa.Table, source: pa.Schema) -> Step:
        """The second half of :meth:`step`, where the groups are: add the partials ``moved``
        (from :meth:`contribute`, of one or more row sets) to the groups (table ``groups``);
        returns the changes of the output. ``source``: the input rows' schema."""
        schema = self.output_schema({self.source: source})
        if moved.num_rows == 0:
            return Step(dict(state), no_changes(schema), empty_dead_letters(), {})
        group = list(self.key)
        transition = Transition(state)
        extra = _extra(moved)
        merged = fold(
            transition,
            GROUPS,
            group,
            merge_partials(moved, group, self.aggregations, extra),
            self.aggregations,
            extra,
        )
        emptied = pc.equal(merged.column(COUNT), 0)
        gone = merged.filter(emptied)
        if gone.num_rows:
            transition.change(GROUPS, group, deletes=gone)
        rows = self._rows(merged.filter(pc.invert(emptied)), source)
        result = combine([upserts(rows), deletes(gone.select(group), schema)], schema)
        return Step(transition.state, result, empty_dead_letters(), transition.delta())

    def _partials(self, rows: pa.Table) -> pa.Table:
        """Per current row: its key, its group, each aggregation's partial and ``__rows`` = 1."""
        needed = [*self.row_key, *self.group, *([self.time] if self.time else [])]
        missing = [c for c in needed if c not in rows.column_names]
        if missing:
            msg = f"the table's rows have no columns {missing} (they have {rows.column_names})"
            raise BatchError(msg)
        if self.window is not None and self.time is not None:
            times = rows.column(self.time)
            if not pa.types.is_integer(times.type):
                msg = f"time column {self.time!r} must be an integer (epoch ms), not {times.type}"
                raise BatchError(msg)
            size = self.window.size_ms
            epoch_ms = pc.fill_null(times, 0).to_numpy(zero_copy_only=False).astype(np.int64)
            starts = np.floor_divide(epoch_ms, size)
            rows = rows.append_column(START, pa.array(starts * size, pa.int64()))
            valid = pc.is_valid(times)
        else:
            valid = pa.array(np.ones(rows.num_rows, dtype=bool))
        for column in self.group:
            valid = pc.and_(valid, pc.is_valid(rows.column(column)))
        rows = rows.filter(valid)
        partials = record_partials(rows, self.aggregations, [*self.row_key, *self.key])
        for name, aggregation in self.aggregations.items():
            if isinstance(aggregation, Sum):
                counted = pc.is_valid(rows.column(aggregation.column)).cast(pa.int64())
                partials = partials.append_column(_values(name), counted)
        return partials.append_column(COUNT, pa.array(np.ones(rows.num_rows, dtype=np.int64)))

    def _rows(self, partials: pa.Table, source: pa.Schema) -> pa.Table:
        """The output rows of groups with these partials."""
        values = finals(partials, self.aggregations, source)
        for name, aggregation in self.aggregations.items():
            if isinstance(aggregation, Sum):
                none = pc.equal(partials.column(_values(name)), 0)
                values[name] = pc.if_else(none, pa.scalar(None, values[name].type), values[name])
        return pa.table({**{c: partials.column(c) for c in self.key}, **values})


def _extra(partials: pa.Table) -> dict[str, str]:
    """The partial columns that add up besides the aggregations' own: the row counts."""
    return {c: "sum" for c in partials.column_names if c == COUNT or c.endswith(".values")}


def _negated(partials: pa.Table, group: tuple[str, ...]) -> pa.Table:
    """``partials`` with every partial column negated, to take those rows out of their group."""
    for index, name in enumerate(partials.column_names):
        if name not in group:
            partials = partials.set_column(index, name, pc.negate(partials.column(name)))
    return partials
