"""A pipeline's stream output: its rows sent on as the records of an append-only topic, or each
routed to one of several topics by a column's value (``Pipeline(publish=Stream(...))``).

Where ``publish=Topic(...)`` sends a table's changes (a compacted changelog keyed by the table's
key), a :class:`Stream` sends each new row once, keyed by any of its columns: a stream filtered,
mapped or re-keyed for a later pipeline, which reads the topic as a stream input. Only a plan
whose rows are never corrected (``topic.stream().rows()``) has rows to send once. The topics are
declared like inputs (key, value schema, event time): a record holds the columns its topic's
value schema names (every column of the row when it names none), and its key is the row's
``key`` column as text. Both are checked against the table when the pipeline is declared.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pyarrow as pa

from streaming.define.topic import Topic
from streaming.define.value_schema import ddl_of, parse_value_schema
from streaming.errors import DefineError


@dataclass(frozen=True)
class Stream:
    """Where a pipeline's rows go as stream records.

    Attributes:
        to: the topic, or, with ``by``, the topic per value of column ``by`` (as text), e.g.
            ``{"EU": EU_PAYMENTS, "US": US_PAYMENTS}``.
        key: the column whose value (as text) is each record's key.
        by: the column whose value picks a row's topic among ``to``; a row whose value names no
            topic (or is null) is not sent, nor is a row whose key is null.
    """

    to: Topic | Mapping[str, Topic]
    key: str
    by: str | None = None


@dataclass(frozen=True)
class StreamOutput:
    """A :class:`Stream` checked against the table it sends: plain data the tasks encode their
    rows with (``streaming.run.stream_records``).

    Attributes:
        key: the record key's column.
        by: the routing column, or None for one topic.
        routes: (value of ``by``, topic) pairs; one pair with value None without ``by``.
        columns: per topic, the columns a record holds.
    """

    key: str
    by: str | None
    routes: tuple[tuple[str | None, str], ...]
    columns: tuple[tuple[str, tuple[str, ...]], ...]

    @property
    def topics(self) -> tuple[str, ...]:
        """Every topic it writes, the first holding the publication's position."""
        return tuple(dict.fromkeys(topic for _, topic in self.routes))


def stream_output(pipeline: str, stream: Stream, appends: bool, schema: pa.Schema) -> StreamOutput:
    """``stream`` checked against the table of ``schema`` (whose plan ``appends`` rows only);
    raises DefineError saying what to change."""
    where = f"pipeline {pipeline}: its stream output"
    if not appends:
        msg = (
            f"{where} needs rows that are only ever added, each sent once: a stream's rows "
            "(topic.stream().rows(), then where/with_columns/select); to send a table's changes, "
            "publish=Topic(...) publishes its changelog"
        )
        raise DefineError(msg)
    names = schema.names
    for role, column in (("key", stream.key), ("by", stream.by)):
        if column is not None and column not in names:
            raise DefineError(f"{where}: {role}={column!r} is not a column; the rows have {names}")
    if stream.by is None:
        if not isinstance(stream.to, Topic):
            msg = f"{where}: to is a Topic, or a mapping value -> Topic with by='<column>'"
            raise DefineError(msg)
        routes: list[tuple[str | None, Topic]] = [(None, stream.to)]
    else:
        if not isinstance(stream.to, Mapping) or not stream.to:
            msg = f"{where}: with by={stream.by!r}, to maps values to topics, e.g. "
            msg += "{'EU': EU_ORDERS, 'US': US_ORDERS}"
            raise DefineError(msg)
        routes = [(str(value), topic) for value, topic in stream.to.items()]
    columns = {topic.name: _record_columns(where, topic, stream.key, schema) for _, topic in routes}
    return StreamOutput(
        key=stream.key,
        by=stream.by,
        routes=tuple((value, topic.name) for value, topic in routes),
        columns=tuple(columns.items()),
    )


def _record_columns(where: str, topic: Topic, key: str, schema: pa.Schema) -> tuple[str, ...]:
    """The columns a record of ``topic`` holds, its declaration checked against the rows."""
    if not isinstance(topic, Topic):
        raise DefineError(f"{where}: {topic!r} is not a Topic")
    where = f"{where} {topic.name!r}"
    if topic.key and topic.key != key:
        msg = f"{where} declares key {topic.key!r}, but the records are keyed by {key!r}"
        raise DefineError(msg)
    if not topic.value_schema:
        return tuple(schema.names)
    try:
        table = {f.name: f.type_name for f in parse_value_schema(ddl_of(schema))}
    except ValueError as exc:
        raise DefineError(f"{where}: {exc}") from None
    differences = [
        f"{f.name} is not a column of the rows" for f in topic.fields if f.name not in table
    ]
    differences += [
        f"{f.name} is {f.type_name}, the rows' is {table[f.name]}"
        for f in topic.fields
        if f.name in table and f.type_name != table[f.name]
    ]
    if differences:
        msg = f"{where}: its value schema does not fit the rows: {'; '.join(differences)}"
        raise DefineError(msg)
    return tuple(f.name for f in topic.fields)
