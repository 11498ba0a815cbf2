"""A stateful pipeline's plan: its inputs, one stateful operator, then row-wise columns and a
filter, all declared without internal columns; ``group_by`` chains a plan over another's table.

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
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from streaming.define.chaining import ROWS, Chained
from streaming.errors import DefineError
from streaming.operators import (
    DELETE,
    Aggregation,
    Operator,
    OperatorError,
    Source,
    Tumbling,
)
from streaming.operators.table_aggregate import TableAggregate

if TYPE_CHECKING:
    from streaming.define.topic import Topic

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

    @property
    def appends(self) -> bool:
        """Whether the table only gains rows (a stream's rows, ``stream().rows()``): never a
        correction or a delete, so each row can be sent on as a stream record."""
        return bool(getattr(self.operator, "appends", False))

    @property
    def nullable_key(self) -> tuple[str, ...]:
        """The key columns that may be null (an outer join's rows without a match)."""
        return tuple(getattr(self.operator, "nullable_key", ()))

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

    def group_by(
        self,
        *columns: str,
        aggregations: Mapping[str, Aggregation],
        window: Tumbling | None = None,
        time: str | None = None,
    ) -> Plan:
        """Aggregates per group of this plan's table rows, regrouped by ``columns`` (and the
        tumbling ``window`` of column ``time``, which adds ``window_start``), as SQL's ``GROUP
        BY`` over this table: a row that changes leaves its old group and joins its new one.

        Takes ``Count``, ``Sum`` and ``Mean``; rows with a null group column count in no group.
        The rows stay where the inputs' partitions are and the groups are shuffled to buckets
        of their own (``streaming.define.chaining``). A stream's records are grouped by
        ``topic.stream().group_by(...)`` instead (``streaming.define.inputs``).
        """
        try:
            then = TableAggregate(
                source=ROWS,
                row_key=self.key,
                group=tuple(columns),
                aggregations=dict(aggregations),
                window=window,
                time=time,
            )
            plan = Plan(inputs=self.inputs, operator=Chained(self, then))
            plan.table_schema()
        except (OperatorError, DefineError) as exc:
            raise DefineError(f"group_by: {exc}") from None
        return plan

    def operator_schema(self) -> pa.Schema:
        """The operator's output rows, before the row-wise steps."""
        try:
            return self.operator.output_schema({t.name: _records(t) for t in self.inputs})
        except OperatorError as exc:
            raise DefineError(str(exc)) from None

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
        # Imported here: pyarrow.dataset (with pandas) is a fifth of a second that every Spark
        # Python worker importing the authoring API would otherwise pay.
        import pyarrow.dataset as ds

        return ds.dataset(rows).to_table(columns=columns)

    def finish(self, changes: pa.Table, schema: pa.Schema) -> pa.Table:
        """The operator's changes as changes of the table (``schema`` plus ``_delete``)."""
        deleted = changes.column(DELETE)
        projected = self.project(changes.drop_columns([DELETE]))
        if self.condition is not None:
            keep = projected.column("_keep").fill_null(False)
            projected = projected.drop_columns(["_keep"])
            if self.appends:  # a row never written needs no delete
                projected, deleted = projected.filter(keep), pc.filter(deleted, keep)
            else:
                deleted = pc.or_(deleted, pc.invert(keep))
        projected = projected.select(schema.names).cast(schema)
        return projected.append_column(DELETE, deleted)

    def describe(self) -> str:
        """Everything that shapes the output, as text (for the fingerprint)."""
        parts = [repr(self.inputs), repr(self.operator)]
        parts += [f"{name} = {expression}" for name, expression in self.derived]
        parts.append(f"where {self.condition}")
        parts.append(f"select {self.selected}")
        return "\n".join(parts)


def _records(topic: Topic) -> pa.Schema:
    """The records schema of ``topic`` as an operator reads it."""
    schema = topic.schema()
    meta = [("_partition", pa.int32()), ("_offset", pa.int64()), ("_timestamp", pa.int64())]
    if topic.changelog:
        meta.append((DELETE, pa.bool_()))
    return pa.schema([*schema, *meta])


def column_names(value: str | tuple[str, ...]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


def period_ms(period: timedelta) -> int:
    ms = int(period / timedelta(milliseconds=1))
    if ms < 0:
        msg = f"a grace period cannot be negative ({period})"
        raise DefineError(msg)
    return ms
