"""A table's changes as the records of its published changelog.

A record's key is the row's key column as text, or a composite key as compact JSON
(``{"ticker":"ACME","window_start":1700000040000}``), so each row keeps one record key; its
value is the row as a JSON object, or None for a delete. The topic's readers and a handover
compare these bytes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

# (record key, the row as JSON or None on delete)
Record = tuple[str, bytes | None]
# (record key, the row as JSON, the topic it goes to): a stream output's record, routed
RoutedRecord = tuple[str, bytes | None, str]
# What a publication sends: records to its topic, or routed ones
Outgoing = Record | RoutedRecord


def record_key(row: dict[str, Any], key: tuple[str, ...]) -> str:
    """The record key of a row: its key column as text, or a composite key as compact JSON."""
    if len(key) == 1:
        return str(row[key[0]])
    values = {name: row[name] for name in key}
    return json.dumps(values, separators=(",", ":"), default=_json_number)


def change_records(changes: pa.Table, key: tuple[str, ...]) -> Iterator[Record]:
    """(record key, the row as JSON or None on delete) of each change, encoded as they are
    taken, a chunk of rows at a time."""
    deleted = changes.column("_delete").to_pylist()
    rows = encoded_rows(changes.drop_columns(["_delete"]), key)
    for (record, value), gone in zip(rows, deleted, strict=True):
        yield record, None if gone else value


def _json_number(value: Any) -> Any:
    """Decimals as JSON numbers (their shortest float form, exact up to 15 digits)."""
    if isinstance(value, Decimal):
        return float(value)
    msg = f"cannot publish a value of type {type(value).__name__}"
    raise TypeError(msg)


_ENCODER = json.JSONEncoder(default=_json_number)


def encoded_rows(
    table: pa.Table, key: tuple[str, ...], chunk_rows: int = 10_000
) -> Iterator[tuple[str, bytes]]:
    """Each row's record key (:func:`record_key`) and the row as a JSON object (``json.dumps``
    of the row, with decimals as floats: the bytes the topic's readers and handovers compare).

    Built column by column, ``chunk_rows`` rows at a time (the Python values of a whole batch's
    columns would take hundreds of MB): a decimal column becomes Python floats from its exact
    text (what ``float(Decimal)`` computes, without a Decimal object and an encoder callback per
    value), the other columns Python values in one call each. About a third faster than encoding
    ``to_pylist()``'s dicts (250,000 rows of transactions_enriched: 1.1 s, not 1.7 s).
    """
    names = table.column_names
    key_at = [names.index(name) for name in key]
    for chunk in table.to_batches(max_chunksize=chunk_rows):
        columns = [_python_values(column) for column in chunk.columns]
        # A decimal key keeps its exact text in the record key, as the row's Decimal has it.
        keys = [
            chunk.column(at).to_pylist()
            if pa.types.is_decimal(chunk.column(at).type)
            else columns[at]
            for at in key_at
        ]
        rows = zip(*columns, strict=True)
        for values, key_values in zip(rows, zip(*keys, strict=True), strict=True):
            row = dict(zip(names, values, strict=True))
            key_row = dict(zip(key, key_values, strict=True))
            yield record_key(key_row, key), _ENCODER.encode(row).encode()


def _python_values(column: pa.Array) -> list[Any]:
    if pa.types.is_decimal(column.type):
        text = pc.cast(column, pa.string()).to_pylist()
        return [None if value is None else float(value) for value in text]
    return column.to_pylist()
