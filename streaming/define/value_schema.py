"""The shape of a pipeline's JSON values: a small Spark DDL (``"id string, amount decimal(18,2)"``).

Parsed without Spark, so a bad schema fails when the pipeline is defined, with a message that
says what to fix, and the executors can build the Arrow type they decode into. Type names and
their aliases are Spark's, spelled as ``quality.spark_types`` knows them (one list for the
platform). Only flat fields of the types below are supported: they are what the bulk JSON
decoder (``streaming.kafka.value_decoder``) checks exactly. Anything richer can be declared as a
string and parsed in ``transform``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pyarrow as pa

from quality.errors import SpecError
from quality.spark_types import normalize_type

# The Arrow type the decoder builds for each supported type, by Spark's own spelling.
_ARROW: dict[str, pa.DataType] = {
    "string": pa.string(),
    "bigint": pa.int64(),
    "int": pa.int32(),
    "smallint": pa.int16(),
    "tinyint": pa.int8(),
    "double": pa.float64(),
    "float": pa.float32(),
    "boolean": pa.bool_(),
}
_SPELLING = {arrow: name for name, arrow in _ARROW.items()}
_DECIMAL = re.compile(r"^decimal\((\d+),(\d+)\)$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SUPPORTED = ", ".join([*_ARROW, "decimal(p,s)"])


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
        name, type_name = parts[0].strip("`"), parts[1].strip()
        if not _NAME.match(name):
            msg = f"value schema field name {name!r} must be a letter or _ then letters, digits, _"
            raise ValueError(msg)
        if any(f.name == name for f in fields):
            raise ValueError(f"value schema declares field {name!r} twice")
        spelling, arrow_type = _supported(name, type_name)
        fields.append(ValueField(name, spelling, arrow_type))
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
    items = []
    for field in schema:
        if pa.types.is_decimal(field.type):
            items.append(f"{field.name} decimal({field.type.precision},{field.type.scale})")
        elif field.type in _SPELLING:
            items.append(f"{field.name} {_SPELLING[field.type]}")
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


def _supported(name: str, type_name: str) -> tuple[str, pa.DataType]:
    """Spark's spelling of a declared type and the Arrow type the decoder builds for it."""
    try:
        spelling = normalize_type(type_name)
    except SpecError:
        spelling = type_name.lower()
    if spelling in _ARROW:
        return spelling, _ARROW[spelling]
    decimal = _DECIMAL.match(spelling)
    if decimal:
        precision, scale = int(decimal.group(1)), int(decimal.group(2))
        if 1 <= precision <= 38 and scale <= precision:
            return spelling, pa.decimal128(precision, scale)
    msg = (
        f"value schema field {name!r} has type {type_name!r}, which the JSON decoder does not "
        f"support; use one of: {SUPPORTED} (declare anything else as string and parse it in "
        "the pipeline's transform)"
    )
    raise ValueError(msg)
