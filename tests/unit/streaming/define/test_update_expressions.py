"""Accumulate's update expressions evaluated on Arrow columns: SQL's values and nulls, and
anything beyond column arithmetic refused (such a kind is merged instead)."""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
import pytest

from streaming.define.update_expressions import UnsupportedUpdate, parse

T = {
    "n": pa.array([1, None, 5], pa.int64()),
    "d": pa.array([Decimal("1.50"), Decimal("2.25"), None], pa.decimal128(18, 2)),
    "v": pa.array(["a", "b", None]),
}
S = {
    "n": pa.array([2, 3, None], pa.int64()),
    "d": pa.array([Decimal("0.50"), None, Decimal("1.00")], pa.decimal128(18, 2)),
    "v": pa.array(["x", "it's", "z"]),
}


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("t.n + s.n", [3, None, None]),
        ("t.n - s.n * 2", [-3, None, None]),
        ("-t.n", [-1, None, -5]),
        ("greatest(t.n, s.n)", [2, 3, 5]),
        ("LEAST(t.n, s.n)", [1, 3, 5]),
        ("coalesce(t.n, s.n, 0)", [1, 3, 5]),
        ("t.d + s.d", [Decimal("2.00"), None, None]),
        ("t.v || s.v", ["ax", "bit's", None]),
        ("concat(s.v, '''s')", ["x's", "it's's", "z's"]),
        ("abs(t.n - 3)", [2, None, 2]),
    ],
)
def test_updates_evaluate_as_sql_does(sql, expected):
    assert parse(sql).evaluate(T, S, 3).to_pylist() == expected


@pytest.mark.parametrize(
    "sql",
    [
        "CASE WHEN t.n > 0 THEN 1 END",
        "t.n > s.n",
        "t.n and s.n",
        "upper(t.v)",
        "x.n + 1",
        "n + 1",
        "t.n +",
        "__import__('os')",
    ],
)
def test_anything_beyond_column_arithmetic_is_refused(sql):
    with pytest.raises(UnsupportedUpdate):
        parse(sql)
