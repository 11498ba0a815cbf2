"""Plan inputs: a topic read as a stream or as a table, and the operators that start a plan
from them (one readable call each)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Literal

from streaming.define.plan import DEFAULT_GRACE, Plan, column_names, period_ms, source_of
from streaming.define.stateful import Stateful, stateful_plan
from streaming.errors import DefineError
from streaming.operators import (
    Aggregation,
    AsOfJoin,
    Compaction,
    FinalWindows,
    GroupAggregate,
    IntervalJoin,
    Operator,
    OperatorConfigError,
    StreamRows,
    WindowedAggregate,
)
from streaming.operators.windows import Window

if TYPE_CHECKING:
    from streaming.define.topic import Topic

Emit = Literal["updates", "final"]


def _plan(
    what: str, topics: tuple[Topic, ...], build: Callable[..., Operator], **config: object
) -> Plan:
    """The plan running operator ``build(**config)`` over ``topics``; a configuration the
    operator refuses fails here, named after the call ``what``."""
    try:
        operator = build(**config)
    except OperatorConfigError as exc:
        raise DefineError(f"{what}: {exc}") from None
    plan = Plan(inputs=topics, operator=operator)
    plan.table_schema()  # a column that does not fit fails here, at definition
    return plan


def _position(position: tuple[str, str]) -> tuple[str, str]:
    """The two columns ``rows(position=...)`` names, checked."""
    if isinstance(position, str) or len(position) != 2 or not all(position):
        msg = f"rows: position names two columns, e.g. ('partition', 'offset'), not {position!r}"
        raise DefineError(msg)
    return (position[0], position[1])


@dataclass(frozen=True)
class TableInput:
    """A topic read as a table (see ``Topic.table``)."""

    topic: Topic

    def rows(self, *, position: tuple[str, str] | None = None) -> Plan:
        """The table itself: per key the record with the highest (partition, offset); a
        tombstone deletes its key. Filter it or extend it with columns.

        Args:
            position: two column names, e.g. ``("partition", "offset")``: each row then also
                holds where its record was read (partition int32, offset int64).
        """
        return _plan(
            "rows",
            (self.topic,),
            Compaction,
            source=source_of(self.topic),
            key_columns=(self.topic.key,),
            position=None if position is None else _position(position),
        )


@dataclass(frozen=True)
class StreamInput:
    """A topic read as a stream (see ``Topic.stream``)."""

    topic: Topic

    def rows(self, *, position: tuple[str, str] = ("partition", "offset")) -> Plan:
        """Every record as a row, to filter, extend with columns and write to topics
        (``Pipeline(publish=Stream(...))``): keyed by where the record was read, in the two
        ``position`` columns (partition int32, offset int64), then the record's columns. Rows are
        only added: a row the plan's filter rejects is left out. Nothing is late."""
        return _plan(
            "rows",
            (self.topic,),
            StreamRows,
            source=source_of(self.topic),
            key_columns=(self.topic.key,),
            position=_position(position),
        )

    def group_by(
        self,
        *columns: str,
        aggregations: Mapping[str, Aggregation],
        window: Window | None = None,
        grace: timedelta | None = None,
        retention: timedelta | None = None,
        emit: Emit = "updates",
    ) -> Plan:
        """Aggregates per group of ``columns``: one row per group, or, with a ``window``, per
        group and event-time window (keyed by the columns and ``window_start``, with
        ``window_end``; a ``Session`` by the columns and ``session_start``, its first record's
        time, with ``session_end``, its last one's), holding the aggregates of its records so
        far. A record within grace that bridges two sessions merges them: both rows are
        deleted and the merged one written.

        Args:
            columns: the grouping columns.
            aggregations: output column -> ``Count()``, ``Sum(col)``, ``Min``, ``Max``,
                ``Mean``, ``Latest`` or an ``Aggregator`` (user-defined).
            window: ``Tumbling``, ``Hopping``, ``Session`` or ``Sliding``; None aggregates
                every record of a group, whenever it comes (nothing is late).
            grace: with a window, how far below its partition's stream time a record may be and
                still count (10 minutes when not given).
            retention: with a window, how long a final window stays in the table (None:
                forever).
            emit: with a window, ``"updates"``: a window's row appears with its first record and
                follows every record within grace; ``"final"``: it appears once, when the window
                is final (its end at or below every partition's stream time minus grace), and
                never changes, so a published topic carries each window once (tumbling,
                hopping and sliding windows, without retention).
        """
        if emit not in ("updates", "final"):
            msg = f"group_by: emit is 'updates' or 'final', not {emit!r}"
            raise DefineError(msg)
        if not columns or not all(isinstance(c, str) and c for c in columns):
            msg = "group_by: give the grouping columns by name, e.g. group_by('user_id'), not "
            msg += repr(columns)
            raise DefineError(msg)
        names = self.topic.schema().names
        missing = [c for c in columns if c not in names]
        if missing:
            msg = f"group_by: topic {self.topic.name} has no columns {missing}; it has {names}"
            raise DefineError(msg)
        source = source_of(self.topic)
        if window is None:
            given = [n for n, v in (("grace", grace), ("retention", retention)) if v is not None]
            given += ["emit='final'"] if emit == "final" else []
            if given:
                msg = (
                    f"group_by: {', '.join(given)} apply to windows; without a window every "
                    "record counts whenever it comes, and the groups are never final"
                )
                raise DefineError(msg)
            return _plan(
                "group_by",
                (self.topic,),
                GroupAggregate,
                source=source,
                key_columns=tuple(columns),
                aggregations=dict(aggregations),
            )
        return _plan(
            "group_by",
            (self.topic,),
            FinalWindows if emit == "final" else WindowedAggregate,
            source=source,
            key_columns=tuple(columns),
            window=window,
            aggregations=dict(aggregations),
            grace_ms=period_ms(DEFAULT_GRACE if grace is None else grace),
            retention_ms=None if retention is None else period_ms(retention),
        )

    def window(
        self,
        window: Window,
        *,
        by: str | tuple[str, ...],
        aggregations: Mapping[str, Aggregation],
        grace: timedelta = DEFAULT_GRACE,
        retention: timedelta | None = None,
        emit: Emit = "updates",
    ) -> Plan:
        """Deprecated: ``group_by(*by, window=window, aggregations=..., ...)`` says the same."""
        columns = column_names(by)
        warnings.warn(
            f"stream.window(..., by={by!r}) is deprecated: write "
            f"stream.group_by({', '.join(map(repr, columns))}, window=..., aggregations=...)",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.group_by(
            *columns,
            aggregations=aggregations,
            window=window,
            grace=grace,
            retention=retention,
            emit=emit,
        )

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
        return self._interval_join(
            "join_latest_within", other, on, key, columns, (before, after), grace, how=how
        )

    def join_within(
        self,
        other: StreamInput,
        *,
        on: str | tuple[str, ...],
        key: str | tuple[str, ...],
        other_key: str | tuple[str, ...],
        columns: Mapping[str, str],
        before: timedelta,
        after: timedelta = timedelta(0),
        how: Literal["inner", "left", "outer"] = "inner",
        grace: timedelta = DEFAULT_GRACE,
    ) -> Plan:
        """Every pair of this stream's records and ``other``'s of the same join key, the other's
        event time within [t - before, t + after] of this one's t (Kafka Streams'
        KStream-KStream join): one row per pair, keyed by ``key`` and ``other_key``.

        Args:
            other: the other stream; its join columns have the names ``on`` names.
            on: the join key columns (in both streams).
            key: this stream's columns naming each of its records, e.g. ``"click_id"``.
            other_key: other's columns naming each of its records, e.g. ``"search_id"``
                (added to the output under their own names unless ``columns`` renames them).
            columns: other's column -> output column, the values to add.
            before: how far before a record's time a match may be.
            after: how far after.
            how: ``"inner"``: the pairs; ``"left"``: also each record of this stream without a
                match, with other's columns null, once no record within grace can match it
                (the horizon passed t + after); ``"outer"``: also other's records without a
                match, this stream's columns null (once the horizon passed t + before). A row
                without a match is written once and never taken back.
            grace: how far below its partition's stream time a record may be and still count.
        """
        if how not in ("inner", "left", "outer"):
            msg = f"join_within: how is 'inner', 'left' or 'outer', not {how!r}"
            raise DefineError(msg)
        added = dict(columns)
        for name in column_names(other_key):
            added.setdefault(name, name)
        return self._interval_join(
            "join_within",
            other,
            on,
            key,
            added,
            (before, after),
            grace,
            how=how,
            pick="all",
            right_key=column_names(other_key),
        )

    def _interval_join(
        self,
        what: str,
        other: StreamInput,
        on: str | tuple[str, ...],
        key: str | tuple[str, ...],
        columns: Mapping[str, str],
        bound: tuple[timedelta, timedelta],
        grace: timedelta,
        **config: object,
    ) -> Plan:
        """The interval join of this stream with ``other`` (``bound``: before, after)."""
        return _plan(
            what,
            (self.topic, other.topic),
            IntervalJoin,
            left=source_of(self.topic),
            right=source_of(other.topic),
            on=column_names(on),
            right_on=column_names(on),
            key_columns=column_names(key),
            right_columns=dict(columns),
            before_ms=period_ms(bound[0]),
            after_ms=period_ms(bound[1]),
            grace_ms=period_ms(grace),
            **{"pick": "latest", **config},
        )

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
        return _plan(
            "join_as_of",
            (self.topic, table.topic),
            AsOfJoin,
            stream=source_of(self.topic),
            table=source_of(table.topic),
            on=column_names(on),
            table_key=(table.topic.key,),
            key_columns=column_names(key),
            table_columns=dict(columns),
            how=how,
            grace_ms=period_ms(grace),
        )
