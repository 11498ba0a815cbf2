"""Plan inputs: a topic read as a stream or as a table, and the operators that start a plan
from them (one readable call each)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Literal

from streaming.define.plan import DEFAULT_GRACE, Plan, column_names, period_ms, source_of
from streaming.define.topic import Topic
from streaming.errors import DefineError
from streaming.operators import (
    Aggregation,
    AsOfJoin,
    Compaction,
    FinalWindows,
    IntervalJoin,
    OperatorConfigError,
    WindowedAggregate,
)
from streaming.operators.windows import Window

if TYPE_CHECKING:
    from streaming.define.stateful import Stateful


def _window_plan(
    topic: Topic,
    window: Window,
    by: str | tuple[str, ...],
    aggregations: Mapping[str, Aggregation],
    grace: timedelta,
    retention: timedelta | None,
    emit: Literal["updates", "final"] = "updates",
) -> Plan:
    if emit not in ("updates", "final"):
        msg = f"window: emit is 'updates' or 'final', not {emit!r}"
        raise DefineError(msg)
    kind = FinalWindows if emit == "final" else WindowedAggregate
    try:
        operator = kind(
            source=source_of(topic),
            key_columns=column_names(by),
            window=window,
            aggregations=dict(aggregations),
            grace_ms=period_ms(grace),
            retention_ms=None if retention is None else period_ms(retention),
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
        emit: Literal["updates", "final"] = "updates",
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
            emit: ``"updates"``: a window's row appears with its first record and follows every
                record within grace; ``"final"``: it appears once, when the window is final (its
                end at or below every partition's stream time minus grace), and never changes,
                so a published topic carries each window once (tumbling and hopping windows,
                without retention).
        """
        return _window_plan(self.topic, window, by, aggregations, grace, retention, emit)

    def process(
        self, function: Stateful, *others: StreamInput, grace: timedelta = DEFAULT_GRACE
    ) -> Plan:
        """This stream's records (and ``others``') through a stateful function the user wrote
        (``streaming.define.stateful``), per key of its ``by`` columns, in event-time order.

        Args:
            function: a function declared with ``@stateful(by=..., key=..., emits=...)``.
            others: further streams the function reads (``state.input`` names a record's);
                at equal event times this stream's records come first, then ``others`` in order.
            grace: how far below its partition's stream time a record may be and still count.
        """
        from streaming.define.stateful import stateful_plan

        for other in others:
            if not isinstance(other, StreamInput):
                msg = f"process: further inputs are streams (topic.stream()), not {other!r}"
                raise DefineError(msg)
        return stateful_plan((self.topic, *(o.topic for o in others)), function, grace)

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
                on=column_names(on),
                right_on=column_names(on),
                key_columns=column_names(key),
                right_columns=dict(columns),
                before_ms=period_ms(before),
                after_ms=period_ms(after),
                how=how,
                pick="latest",
                grace_ms=period_ms(grace),
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
                on=column_names(on),
                table_key=(table.topic.key,),
                key_columns=column_names(key),
                table_columns=dict(columns),
                how=how,
                grace_ms=period_ms(grace),
            )
        except OperatorConfigError as exc:
            raise DefineError(f"join_as_of: {exc}") from None
        plan = Plan(inputs=(self.topic, table.topic), operator=operator)
        plan.table_schema()
        return plan
