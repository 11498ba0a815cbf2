"""The shape of a pipeline's JSON values: a small Spark DDL (``"id string, amount decimal(18,2)"``).

Parsed without Spark, so a bad schema fails when the pipeline is defined, with a message that
says what to fix, and the executors can build the Arrow type they decode into. Only flat fields of
the types below are supported: they are what the bulk JSON decoder
(``streaming.kafka.value_decoder``) checks exactly. Anything richer can be declared as a string
and parsed in ``transform``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pyarrow as pa

_SIMPLE: dict[str, pa.DataType] = {
    "string": pa.string(),
    "bigint": pa.int64(),
    "long": pa.int64(),
    "int": pa.int32(),
    "integer": pa.int32(),
    "smallint": pa.int16(),
    "short": pa.int16(),
    "tinyint": pa.int8(),
    "byte": pa.int8(),
    "double": pa.float64(),
    "float": pa.float32(),
    "boolean": pa.bool_(),
}
_DECIMAL = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SUPPORTED = ", ".join([*_SIMPLE, "decimal(p,s)"])


@dataclass(frozen=True)
class ValueField:
    name: str
    type_name: str  # the DDL spelling, lower-case: "bigint", "decimal(18,2)"
    arrow_type: pa.DataType


def parse_value_schema(ddl: str) -> tuple[ValueField, ...]:
    """The fields of ``ddl``; raises ValueError naming the field and what to write instead."""
    fields: list[ValueField] = []
    for item in _split_fields(ddl):
        parts = item.split(None, 1)
        if len(parts) != 2:
            msg = f"value schema item {item!r} must be '<name> <type>', e.g. 'amount decimal(18,2)'"
            raise ValueError(msg)
        name, type_name = parts[0].strip("`"), parts[1].strip().lower()
        if not _NAME.match(name):
            msg = f"value schema field name {name!r} must be a letter or _ then letters, digits, _"
            raise ValueError(msg)
        if any(f.name == name for f in fields):
            raise ValueError(f"value schema declares field {name!r} twice")
        fields.append(ValueField(name, _normal(type_name), _arrow_type(name, type_name)))
    if not fields:
        raise ValueError("the value schema declares no fields, e.g. 'id string, ts bigint'")
    return tuple(fields)


def check_required(fields: tuple[ValueField, ...], required: tuple[str, ...]) -> None:
    """Raise ValueError when a required field is not one of the schema's fields."""
    names = [f.name for f in fields]
    unknown = [name for name in required if name not in names]
    if unknown:
        msg = f"required fields {unknown} are not in the value schema ({', '.join(names)})"
        raise ValueError(msg)


def arrow_struct(fields: tuple[ValueField, ...]) -> pa.StructType:
    return pa.struct([(f.name, f.arrow_type) for f in fields])


def spark_ddl(fields: tuple[ValueField, ...]) -> str:
    """The struct type of the decoded value, as Spark DDL (``struct<a: string, ...>``)."""
    return "struct<" + ", ".join(f"`{f.name}`: {f.type_name}" for f in fields) + ">"


def ddl_of(schema: pa.Schema) -> str:
    """The value-schema DDL of an Arrow schema of supported types (e.g. a table's)."""
    names = {pa.string(): "string", pa.int64(): "bigint", pa.int32(): "int", pa.int16(): "smallint"}
    names |= {pa.int8(): "tinyint", pa.float64(): "double", pa.float32(): "float"}
    names |= {pa.bool_(): "boolean"}
    items = []
    for field in schema:
        if pa.types.is_decimal(field.type):
            items.append(f"{field.name} decimal({field.type.precision},{field.type.scale})")
        elif field.type in names:
            items.append(f"{field.name} {names[field.type]}")
        else:
            msg = f"column {field.name!r} has type {field.type}, which a value schema cannot hold"
            raise ValueError(msg)
    return ", ".join(items)


def _split_fields(ddl: str) -> list[str]:
    """Split on the commas that are not inside parentheses (``decimal(18,2)`` has one)."""
    items, depth, current = [], 0, []
    for char in ddl:
        if char == "," and depth == 0:
            items.append("".join(current).strip())
            current = []
            continue
        depth += {"(": 1, ")": -1}.get(char, 0)
        current.append(char)
    items.append("".join(current).strip())
    return [item for item in items if item]


def _arrow_type(name: str, type_name: str) -> pa.DataType:
    if type_name in _SIMPLE:
        return _SIMPLE[type_name]
    decimal = _DECIMAL.match(type_name)
    if decimal:
        precision, scale = int(decimal.group(1)), int(decimal.group(2))
        if 1 <= precision <= 38 and scale <= precision:
            return pa.decimal128(precision, scale)
    msg = (
        f"value schema field {name!r} has type {type_name!r}, which the JSON decoder does not "
        f"support; use one of: {SUPPORTED} (declare anything else as string and parse it in "
        "the pipeline's transform)"
    )
    raise ValueError(msg)


def _normal(type_name: str) -> str:
    return re.sub(r"\s+", "", type_name)
