"""Spark simple type strings ("bigint", "decimal(18,2)") as table specs declare them.

Pure string handling, no Spark needed: a spec is checked when it is declared, long before a
session exists. Great Expectations checks Spark types by class (``DecimalType``), so the class
name is derived here too; the exact string (precision and scale included) is compared with
``DataType.simpleString()`` of the table's schema.
"""

from __future__ import annotations

import re

from quality.errors import SpecError

# Spark's own spelling (simpleString) of each accepted alias, and the pyspark class it maps to.
_ALIASES = {
    "string": "string",
    "bigint": "bigint",
    "long": "bigint",
    "int": "int",
    "integer": "int",
    "smallint": "smallint",
    "short": "smallint",
    "tinyint": "tinyint",
    "byte": "tinyint",
    "double": "double",
    "float": "float",
    "real": "float",
    "boolean": "boolean",
    "bool": "boolean",
    "date": "date",
    "timestamp": "timestamp",
    "timestamp_ntz": "timestamp_ntz",
    "binary": "binary",
}
_CLASSES = {
    "string": "StringType",
    "bigint": "LongType",
    "int": "IntegerType",
    "smallint": "ShortType",
    "tinyint": "ByteType",
    "double": "DoubleType",
    "float": "FloatType",
    "boolean": "BooleanType",
    "date": "DateType",
    "timestamp": "TimestampType",
    "timestamp_ntz": "TimestampNTZType",
    "binary": "BinaryType",
}
_COMPLEX = {"array": "ArrayType", "map": "MapType", "struct": "StructType"}
_DECIMAL = re.compile(r"^decimal\s*(?:\(\s*(\d+)\s*,\s*(\d+)\s*\))?$")
_NUMERIC = frozenset({"bigint", "int", "smallint", "tinyint", "double", "float"})


def normalize_type(type_string: str) -> str:
    """Spark's ``simpleString`` spelling of a declared type.

    Args:
        type_string: a Spark SQL simple type such as ``"long"``, ``"decimal(18, 2)"``.

    Returns:
        The canonical form, e.g. ``"bigint"``, ``"decimal(18,2)"``.

    Raises:
        SpecError: the type is not a Spark type this package knows.
    """
    text = type_string.strip().lower()
    if text in _ALIASES:
        return _ALIASES[text]
    match = _DECIMAL.match(text)
    if match:
        precision, scale = match.groups()
        return f"decimal({precision or 10},{scale or 0})"
    head = text.split("<", 1)[0].strip()
    if head in _COMPLEX and text.endswith(">"):
        return re.sub(r"\s+", "", text)
    msg = (
        f"unknown Spark type {type_string!r}; use a Spark simple type string such as "
        "'string', 'bigint', 'int', 'double', 'boolean', 'timestamp' or 'decimal(18,2)'"
    )
    raise SpecError(msg)


def gx_type_class(type_string: str) -> str:
    """The pyspark ``DataType`` class name Great Expectations checks a column against."""
    canonical = normalize_type(type_string)
    if canonical.startswith("decimal"):
        return "DecimalType"
    if canonical in _CLASSES:
        return _CLASSES[canonical]
    return _COMPLEX[canonical.split("<", 1)[0]]


def is_parametrised(type_string: str) -> bool:
    """Whether the class name alone does not pin the type (decimal precision, element types)."""
    return gx_type_class(type_string) in {"DecimalType", *_COMPLEX.values()}


def is_numeric(type_string: str) -> bool:
    """Whether the type takes a mean and percentiles (integral, floating or decimal).

    False for types this module does not know (a table's schema may hold any Spark type).
    """
    try:
        canonical = normalize_type(type_string)
    except SpecError:
        return False
    return canonical in _NUMERIC or canonical.startswith("decimal")
