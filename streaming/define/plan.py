"""A stateful pipeline's plan: its inputs, one stateful operator, then row-wise columns and a
filter, all declared without internal columns.

The plan is data: it can be inspected (its inputs, key and table schema), fingerprinted
(:meth:`Plan.describe`) and run one micro-batch at a time by ``streaming.run``. Row-wise steps are
pyarrow compute expressions (``pyarrow.compute.field("amount") > 100``) applied to the operator's
output rows: a derived column is recomputed whenever its row changes, and a row the filter
rejects is deleted from the table, so the table stays the definition evaluated on the log prefix.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Literal

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from streaming.define.topic import Topic
from streaming.errors import DefineError
from streaming.operators import (
    DELETE,
    Aggregation,
    AsOfJoin,
    BatchError,
    Compaction,
    IntervalJoin,
    Operator,
    OperatorConfigError,
    Source,
    WindowedAggregate,
)
from streaming.operators.windows import Window

DEFAULT_GRACE = timedelta(minutes=10)


def source_of(topic: Topic) -> Source:
    """The operator input a topic becomes (named after the topic)."""
    return Source(name=topic.name, time=topic.time, changelog=topic.changelog)


@dataclass(frozen=True)
class Plan:
    """Inputs, a stateful operator and row-wise steps on its output (see the module docstring).

    Build one from a topic (``orders.stream().join_as_of(...)``) rather than directly.
    """

    inputs: tuple[Topic, ...]
    operator: Operator
    derived: tuple[tuple[str, pc.Expression], ...] = ()
    condition: pc.Expression | None = None
    selected: tuple[str, ...] | None = None

    @property
    def topics(self) -> tuple[str, ...]:
        return tuple(topic.name for topic in self.inputs)

    @property
    def key(self) -> tuple[str, ...]:
        """The output table's key columns."""
        return tuple(self.operator.key)

    def with_columns(self, **columns: pc.Expression) -> Plan:
        """Add (or replace) columns computed from each output row."""
        for name, expression in columns.items():
            if name.startswith("_") or not isinstance(expression, pc.Expression):
                msg = f"column {name!r}: give a pyarrow compute expression, names not starting '_'"
                raise DefineError(msg)
            if name in self.key:
                msg = f"column {name!r} is part of the key; key columns cannot be recomputed"
                raise DefineError(msg)
        plan = replace(self, derived=(*self.derived, *columns.items()))
        plan.table_schema()  # an unknown column or a type error fails here, at definition
        return plan

    def select(self, *columns: str) -> Plan:
        """Keep only these columns (the key columns are always kept, first)."""
        chosen = [*self.key, *[c for c in columns if c not in self.key]]
        names = self.table_schema().names
        unknown = [c for c in chosen if c not in names]
        if unknown:
            msg = f"select: no columns {unknown}; the rows have {names}"
            raise DefineError(msg)
        return replace(self, selected=tuple(chosen))

    def where(self, condition: pc.Expression) -> Plan:
        """Keep only the output rows for which ``condition`` is true (null counts as false)."""
        combined = condition if self.condition is None else self.condition & condition
        plan = replace(self, condition=combined)
        plan.table_schema()
        return plan

    def operator_schema(self) -> pa.Schema:
        """The operator's output rows, before the row-wise steps."""
        empty = {topic.name: _records(topic) for topic in self.inputs}
        if isinstance(self.operator, AsOfJoin):
            stream = empty[self.operator.stream.name].schema
            table = empty[self.operator.table.name].schema
            try:
                return self.operator._row_schema(stream, table)
            except (BatchError, OperatorConfigError) as exc:
                raise DefineError(str(exc)) from None
        if isinstance(self.operator, IntervalJoin):
            left = empty[self.operator.left.name].schema
            right = empty[self.operator.right.name].schema
            try:
                return self.operator._row_schema(left, right)
            except (BatchError, OperatorConfigError) as exc:
                raise DefineError(str(exc)) from None
        if isinstance(self.operator, WindowedAggregate):
            records = empty[self.operator.source.name]
            records = records.append_column("_time", pa.array([], pa.int64()))
            return self.operator._row_schema(records, records.schema)
        if isinstance(self.operator, Compaction):
            return self.operator.output_schema(empty[self.operator.source.name].schema)
        msg = f"no table schema for operator {type(self.operator).__name__}"
        raise DefineError(msg)

    def table_schema(self) -> pa.Schema:
        """The output table's schema: key columns first."""
        try:
            rows = self.project(self.operator_schema().empty_table())
            if "_keep" in rows.column_names:
                rows = rows.drop_columns(["_keep"])
            if self.selected is not None:
                rows = rows.select(list(self.selected))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            msg = f"a column expression or filter does not fit the rows: {exc}"
            raise DefineError(msg) from None
        return rows.schema

    def project(self, rows: pa.Table) -> pa.Table:
        """``rows`` with the derived columns (and, if any filter, a ``_keep`` column)."""
        if not self.derived and self.condition is None:
            return rows
        columns = {name: pc.field(name) for name in rows.column_names}
        columns.update(dict(self.derived))
        if self.condition is not None:
            columns["_keep"] = self.condition
        return ds.dataset(rows).to_table(columns=columns)

    def finish(self, changes: pa.Table, schema: pa.Schema) -> pa.Table:
        """The operator's changes as changes of the table (``schema`` plus ``_delete``)."""
        deleted = changes.column(DELETE)
        projected = self.project(changes.drop_columns([DELETE]))
        if self.condition is not None:
            keep = projected.column("_keep").fill_null(False)
            deleted = pc.or_(deleted, pc.invert(keep))
            projected = projected.drop_columns(["_keep"])
        projected = projected.select(schema.names).cast(schema)
        return projected.append_column(DELETE, deleted)

    def describe(self) -> str:
        """Everything that shapes the output, as text (for the fingerprint)."""
        parts = [repr(self.inputs), repr(self.operator)]
        parts += [f"{name} = {expression}" for name, expression in self.derived]
        parts.append(f"where {self.condition}")
        parts.append(f"select {self.selected}")
        return "\n".join(parts)


def _window_plan(
    topic: Topic,
    window: Window,
    by: str | tuple[str, ...],
    aggregations: Mapping[str, Aggregation],
    grace: timedelta,
    retention: timedelta | None,
) -> Plan:
    try:
        operator = WindowedAggregate(
            source=source_of(topic),
            key_columns=_names(by),
            window=window,
            aggregations=dict(aggregations),
            grace_ms=_ms(grace),
            retention_ms=None if retention is None else _ms(retention),
        )
    except OperatorConfigError as exc:
        raise DefineError(f"window: {exc}") from None
    plan = Plan(inputs=(topic,), operator=operator)
    plan.table_schema()
    return plan


@dataclass(frozen=True)
class TableInput:
    """A topic read as a table (see ``Topic.table``)."""

    topic: Topic

    def rows(self) -> Plan:
        """The table itself (per key the latest record; a tombstone deletes), to filter or
        extend with columns."""
        source = source_of(self.topic)
        plan = Plan(inputs=(self.topic,), operator=Compaction(source, (self.topic.key,)))
        plan.table_schema()
        return plan


@dataclass(frozen=True)
class StreamInput:
    """A topic read as a stream (see ``Topic.stream``)."""

    topic: Topic

    def window(
        self,
        window: Window,
        *,
        by: str | tuple[str, ...],
        aggregations: Mapping[str, Aggregation],
        grace: timedelta = DEFAULT_GRACE,
        retention: timedelta | None = None,
    ) -> Plan:
        """Aggregates per key and event-time window: one row per (``by``, ``window_start``)
        with ``window_end`` and the aggregates so far.

        Args:
            window: ``Tumbling``, ``Hopping`` or ``Session`` (``streaming.define.windows``).
            by: the grouping columns.
            aggregations: output column -> ``Count()``, ``Sum(col)``, ``Min``, ``Max``,
                ``Mean`` or ``Latest``.
            grace: how far below its partition's stream time a record may be and still count.
            retention: how long a final window stays in the table (None: forever).
        """
        return _window_plan(self.topic, window, by, aggregations, grace, retention)

    def join_latest_within(
        self,
        other: StreamInput,
        *,
        on: str | tuple[str, ...],
        key: str | tuple[str, ...],
        columns: Mapping[str, str],
        before: timedelta,
        after: timedelta = timedelta(0),
        how: Literal["inner", "left"] = "left",
        grace: timedelta = DEFAULT_GRACE,
    ) -> Plan:
        """Each record with the latest record of ``other`` of the same join key whose event time
        is within [t - before, t + after] (a stream-stream join; one row per output key).

        Args:
            other: the other stream; its join columns have the names ``on`` names.
            on: the join key columns (in both streams).
            key: the output key (columns of this stream), e.g. ``"click_id"``.
            columns: other's column -> output column, the values to add.
            before: how far before a record's time a match may be.
            after: how far after.
            how: ``"left"`` keeps records without a match (null columns); ``"inner"`` drops them.
            grace: how far below its partition's stream time a record may be and still count.
        """
        try:
            operator = IntervalJoin(
                left=source_of(self.topic),
                right=source_of(other.topic),
                on=_names(on),
                right_on=_names(on),
                key_columns=_names(key),
                right_columns=dict(columns),
                before_ms=_ms(before),
                after_ms=_ms(after),
                how=how,
                pick="latest",
                grace_ms=_ms(grace),
            )
        except OperatorConfigError as exc:
            raise DefineError(f"join_latest_within: {exc}") from None
        plan = Plan(inputs=(self.topic, other.topic), operator=operator)
        plan.table_schema()
        return plan

    def join_as_of(
        self,
        table: TableInput,
        *,
        on: str | tuple[str, ...],
        key: str | tuple[str, ...],
        columns: Mapping[str, str],
        how: Literal["inner", "left"] = "left",
        grace: timedelta = DEFAULT_GRACE,
    ) -> Plan:
        """Each stream record with the table's row as of the record's event time.

        Args:
            table: the table input.
            on: the stream columns matched with the table's key.
            key: the output key (stream columns), e.g. ``"txn_id"``.
            columns: table column -> output column, the table values to add.
            how: ``"left"`` keeps records without a match (null table columns); ``"inner"``
                leaves them out.
            grace: how far below its partition's stream time a record may be and still count.
        """
        if not isinstance(table, TableInput):
            msg = "join_as_of needs a table input: topic.table()"
            raise DefineError(msg)
        try:
            operator = AsOfJoin(
                stream=source_of(self.topic),
                table=source_of(table.topic),
                on=_names(on),
                table_key=(table.topic.key,),
                key_columns=_names(key),
                table_columns=dict(columns),
                how=how,
                grace_ms=_ms(grace),
            )
        except OperatorConfigError as exc:
            raise DefineError(f"join_as_of: {exc}") from None
        plan = Plan(inputs=(self.topic, table.topic), operator=operator)
        plan.table_schema()
        return plan


def _records(topic: Topic) -> pa.Table:
    """An empty records table of ``topic`` as an operator reads it."""
    schema = topic.schema()
    meta = [("_partition", pa.int32()), ("_offset", pa.int64()), ("_timestamp", pa.int64())]
    if topic.changelog:
        meta.append((DELETE, pa.bool_()))
    return pa.schema([*schema, *meta]).empty_table()


def _names(value: str | tuple[str, ...]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


def _ms(period: timedelta) -> int:
    ms = int(period / timedelta(milliseconds=1))
    if ms < 0:
        msg = f"a grace period cannot be negative ({period})"
        raise DefineError(msg)
    return ms
