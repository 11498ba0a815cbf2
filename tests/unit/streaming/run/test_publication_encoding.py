"""A published row's bytes: ``encoded_rows`` (column by column) writes exactly what
``json.dumps(row)`` writes for the row ``to_pylist()`` gives, decimals as their float, and the
record key a row has (its key column as text, a composite key as compact JSON), so readers and
handovers that compare published records see no change from the per-row encoding."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streaming.run.changelog_records import encoded_rows


def _number(value: object) -> float:
    assert isinstance(value, Decimal)
    return float(value)


def _per_row(table: pa.Table, key: tuple[str, ...]) -> list[tuple[str, bytes]]:
    def record_key(row: dict) -> str:
        if len(key) == 1:
            return str(row[key[0]])
        values = {name: row[name] for name in key}
        return json.dumps(values, separators=(",", ":"), default=_number)

    return [
        (record_key(row), json.dumps(row, default=_number).encode()) for row in table.to_pylist()
    ]


cents = st.integers(min_value=-(10**18) + 1, max_value=10**18 - 1)
text = st.text(max_size=12)
keys = st.sampled_from([("txn_id",), ("amount",), ("txn_id", "ts"), ("customer_name", "amount")])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(text, st.one_of(st.none(), cents), st.one_of(st.none(), text), st.booleans()),
        min_size=1,
        max_size=40,
    ),
    keys,
)
def test_encoded_rows_write_what_json_dumps_writes_for_each_row(rows, key) -> None:
    table = pa.table(
        {
            "txn_id": [r[0] for r in rows],
            "amount": pa.array(
                [None if r[1] is None else Decimal(r[1]).scaleb(-2) for r in rows],
                pa.decimal128(18, 2),
            ),
            "customer_name": [r[2] for r in rows],
            "suspicious": [r[3] for r in rows],
            "ts": list(range(len(rows))),
        }
    )
    # chunks of 7 rows: rows spread over several chunks encode as one table does
    assert list(encoded_rows(table, key, chunk_rows=7)) == _per_row(table, key)


def test_a_type_json_cannot_write_is_refused_by_name() -> None:
    table = pa.table({"k": ["a"], "at": pa.array([datetime(2026, 1, 1, tzinfo=UTC)])})
    with pytest.raises(TypeError, match="cannot publish a value of type datetime"):
        list(encoded_rows(table, ("k",)))
