"""A topic declared once: its key, the shape of its values, its event time and what a null value
means. The decoder, the records an operator reads and the table columns all derive from it.

A topic a pipeline publishes (``Pipeline(publish=Topic("orders_enriched"))``) may leave its key
and value schema out: they derive from the published table. Read such a topic through the
publishing pipeline (``PIPELINE.output_topic()``), which gives it both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import pyarrow as pa

from streaming.define.inputs import StreamInput, TableInput
from streaming.define.value_schema import ValueField, check_required, parse_value_schema
from streaming.errors import DefineError

Tombstones = Literal["delete", "invalid"]


@dataclass(frozen=True)
class Topic:
    """One Kafka topic, as a pipeline's input or output.

    Attributes:
        name: the topic.
        key: the column the record's Kafka key (UTF-8) fills; a value field of the same name is
            replaced by it, and a tombstone carries only it. An output topic may leave it out
            (``""``): it is the table's key.
        value_schema: DDL of the JSON value's fields (``streaming.define.value_schema``). An
            output topic may leave it out (``""``): it is the table's columns.
        time: the value field holding the event time (epoch ms); None takes the Kafka record
            timestamp. A tombstone's event time is always its record timestamp.
        tombstones: ``"delete"``: a null value deletes its key (the topic is a changelog);
            ``"invalid"``: a null value is a bad record and is dead-lettered.
        required: value fields that must be present and non-null, else the record is
            dead-lettered (the event-time field always is).
    """

    name: str
    key: str = ""
    value_schema: str = ""
    time: str | None = None
    tombstones: Tombstones = "invalid"
    required: tuple[str, ...] = ()
    fields: tuple[ValueField, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.name or not isinstance(self.name, str):
            msg = "a topic needs a name, e.g. Topic('orders', key='order_id', value_schema=...)"
            raise DefineError(msg)
        if self.tombstones not in ("delete", "invalid"):
            msg = f"topic {self.name}: tombstones must be 'delete' or 'invalid', not "
            msg += repr(self.tombstones)
            raise DefineError(msg)
        required = tuple(self.required)
        if self.time is not None and self.time not in required:
            required = (*required, self.time)
        fields: tuple[ValueField, ...] = ()
        if self.value_schema:
            try:
                fields = parse_value_schema(self.value_schema)
                check_required(fields, required)
            except ValueError as exc:
                raise DefineError(f"topic {self.name}: {exc}") from exc
        elif required:
            msg = f"topic {self.name}: required fields and an event-time field need a value_schema"
            raise DefineError(msg)
        if self.time is not None:
            kind = next(f for f in fields if f.name == self.time).arrow_type
            if not pa.types.is_integer(kind):
                msg = f"topic {self.name}: the event-time field {self.time!r} must be an integer "
                msg += f"(epoch ms), not {kind}"
                raise DefineError(msg)
        object.__setattr__(self, "required", required)
        object.__setattr__(self, "fields", fields)

    @property
    def changelog(self) -> bool:
        """Whether the topic is read as a table: a null value deletes its key."""
        return self.tombstones == "delete"

    @property
    def readable(self) -> bool:
        """Whether it declares what reading it needs: its key and value schema."""
        return bool(self.key and self.value_schema)

    def check_readable(self) -> None:
        """Raise DefineError, saying what to declare, unless the topic can be read."""
        if not self.readable:
            missing = " and ".join(
                name
                for name, given in (("key", self.key), ("value_schema", self.value_schema))
                if not given
            )
            msg = (
                f"topic {self.name}: reading it needs its {missing}; declare them "
                f"(Topic({self.name!r}, key=..., value_schema=...)), or, for a topic a pipeline "
                "publishes, read it through that pipeline: PIPELINE.output_topic()"
            )
            raise DefineError(msg)

    def schema(self) -> pa.Schema:
        """The user columns of a record: the key, then the value fields."""
        self.check_readable()
        columns = [pa.field(self.key, pa.string())]
        columns += [pa.field(f.name, f.arrow_type) for f in self.fields if f.name != self.key]
        return pa.schema(columns)

    def stream(self) -> StreamInput:
        """This topic as a stream: every record is an event."""
        self.check_readable()
        return StreamInput(self)

    def table(self) -> TableInput:
        """This topic as a table: per key, the latest version as of an event time."""
        self.check_readable()
        if not self.changelog:
            msg = f"topic {self.name}: a table input needs tombstones='delete' (a changelog)"
            raise DefineError(msg)
        return TableInput(self)
