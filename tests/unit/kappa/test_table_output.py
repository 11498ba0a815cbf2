"""Rows for programs: CSV and JSON lines read back by the standard library equal the rows."""

from __future__ import annotations

import csv
import io
import json
from decimal import Decimal

import pyarrow as pa

from kappa.table_output import write_rows

ROWS = [
    {"id": "a,1", "amount": Decimal("12.50"), "note": 'say "hi"\nbye', "n": 3},
    {"id": "b", "amount": None, "note": None, "n": None},
]
TABLE = pa.Table.from_pylist(
    ROWS,
    schema=pa.schema(
        [
            ("id", pa.string()),
            ("amount", pa.decimal128(10, 2)),
            ("note", pa.string()),
            ("n", pa.int64()),
        ]
    ),
)


def test_csv_has_a_header_quotes_what_needs_it_and_leaves_nulls_empty():
    out = io.StringIO()
    write_rows(TABLE, "csv", out, "(footer not in csv)")
    back = list(csv.reader(io.StringIO(out.getvalue())))
    assert back == [
        ["id", "amount", "note", "n"],
        ["a,1", "12.5", 'say "hi"\nbye', "3"],
        ["b", "", "", ""],
    ]


def test_jsonl_is_one_object_per_row():
    out = io.StringIO()
    write_rows(TABLE, "jsonl", out)
    assert [json.loads(line) for line in out.getvalue().splitlines()] == [
        {"id": "a,1", "amount": 12.5, "note": 'say "hi"\nbye', "n": 3},
        {"id": "b", "amount": None, "note": None, "n": None},
    ]
