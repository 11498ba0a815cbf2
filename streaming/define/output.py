"""A pipeline's output topic: declared as a :class:`Topic`, like its inputs, and read back by
name (``Pipeline.publish``).

The published topic is the table's changelog (key, row as JSON, null on delete), so its key and
value schema are the table's: a declaration may leave them out, and when it gives them they must
be the table's. ``Pipeline.output_topic()`` gives the topic with both, to read it back.
"""

from __future__ import annotations

import warnings

import pyarrow as pa

from streaming.define.topic import Topic
from streaming.define.value_schema import ddl_of, parse_value_schema
from streaming.errors import DefineError


class TopicName(str):
    """A published topic's name as a pipeline keeps it. Handing it back (as
    ``dataclasses.replace`` does) is not the deprecated spelling ``publish="name"``."""

    __slots__ = ()


def published_name(
    pipeline: str, publish: Topic | str | None, keys: tuple[str, ...], schema: pa.Schema
) -> TopicName | None:
    """The name of the topic ``publish`` declares, checked against the table (``keys`` and
    ``schema``); raises DefineError saying what differs."""
    if publish is None or isinstance(publish, TopicName):
        return publish
    if isinstance(publish, str):
        warnings.warn(
            f"pipeline {pipeline}: publish={publish!r} (a string) is deprecated: declare the "
            f"output topic as the inputs are, publish=Topic({publish!r}), e.g. in "
            "pipelines/topics.py",
            DeprecationWarning,
            stacklevel=3,
        )
        publish = Topic(publish)
    if not isinstance(publish, Topic):
        msg = f"pipeline {pipeline}: publish takes a Topic, e.g. publish=Topic('orders_enriched')"
        raise DefineError(msg)
    where = f"pipeline {pipeline}: its output topic {publish.name!r}"
    if publish.time is not None or publish.required:
        msg = (
            f"{where} declares an event time or required fields; its records are the table's "
            "rows: declare only its name (and, if you like, its key and value_schema)"
        )
        raise DefineError(msg)
    if publish.key and (len(keys) > 1 or publish.key != keys[0]):
        table_key = keys[0] if len(keys) == 1 else f"({', '.join(keys)}), published as JSON"
        msg = (
            f"{where} declares key {publish.key!r}, but the table's key is {table_key}; leave "
            "key out (it derives from the table) or declare the table's"
        )
        raise DefineError(msg)
    if publish.value_schema:
        _check_value_schema(where, publish, schema)
    return TopicName(publish.name)


def _check_value_schema(where: str, publish: Topic, schema: pa.Schema) -> None:
    try:
        ddl = ddl_of(schema)
    except ValueError as exc:
        raise DefineError(f"{where}: {exc}") from None
    table = {f.name: f.type_name for f in parse_value_schema(ddl)}
    declared = {f.name: f.type_name for f in publish.fields}
    differences = [f"{n} is not a column of the table" for n in declared if n not in table]
    differences += [f"the table's column {n} is missing" for n in table if n not in declared]
    differences += [
        f"{n} is {declared[n]}, the table's is {table[n]}"
        for n in declared
        if n in table and declared[n] != table[n]
    ]
    if differences:
        msg = (
            f"{where} declares a value schema that is not the table's: {'; '.join(differences)}. "
            f"Leave value_schema out (it derives from the table) or declare {ddl!r}"
        )
        raise DefineError(msg)


def output_topic(
    pipeline: str, publish: str | None, keys: tuple[str, ...], schema: pa.Schema
) -> Topic:
    """The published changelog as a topic another pipeline reads (as a table)."""
    if publish is None:
        msg = f"pipeline {pipeline} publishes no topic: set publish=Topic('<topic>')"
        raise DefineError(msg)
    if len(keys) > 1:
        msg = (
            f"pipeline {pipeline}: its topic is keyed by the composite key ({', '.join(keys)}) "
            "as JSON, which a topic input cannot read back as columns; read the table of a "
            "pipeline keyed by one column"
        )
        raise DefineError(msg)
    try:
        ddl = ddl_of(schema)
    except ValueError as exc:
        raise DefineError(f"pipeline {pipeline}: {exc}") from None
    return Topic(str(publish), key=keys[0], value_schema=ddl, tombstones="delete")
