"""Rows by key through the one-shot path (``kappa table get``): keys typed per key column,
composite keys as ``a,b`` or JSON, in the order asked; a bad key is one line saying what to fix."""

from __future__ import annotations

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from bench.support.settings import private_settings
from streaming.deployment import Deployment
from streaming.errors import QueryError
from streaming.query import KeyLookup, lookup, parse_keys
from streaming.query.lookup import key_fields

ROWS = [
    {"customer_id": "c1", "window_start": 0, "txn_count": 2},
    {"customer_id": "c1", "window_start": 3_600_000, "txn_count": 5},
    {"customer_id": "c2", "window_start": 0, "txn_count": 1},
    {"customer_id": "c'3", "window_start": 0, "txn_count": 7},
]


@pytest.fixture
def settings(tmp_path):
    settings = private_settings(tmp_path / "home")
    table = pa.Table.from_pylist(
        ROWS,
        schema=pa.schema(
            [("customer_id", pa.string()), ("window_start", pa.int64()), ("txn_count", pa.int64())]
        ),
    )
    write_deltalake(str(Deployment("spend_hourly", "v1", settings.home).table_path), table)
    return settings


def test_composite_keys_from_the_command_line_find_their_rows_in_order(settings):
    fields = key_fields(settings, "spend_hourly")
    keys = parse_keys(
        ['{"customer_id": "c2", "window_start": 0}', "c1,3600000", "c'3,0", "c9,0", "c1,0"],
        fields,
    )
    assert keys == [("c2", 0), ("c1", 3_600_000), ("c'3", 0), ("c9", 0), ("c1", 0)]
    expected = [ROWS[2], ROWS[1], ROWS[3], ROWS[0]]
    assert lookup(settings, "spend_hourly", keys).to_pylist() == expected
    assert KeyLookup(settings, "spend_hourly").get(*keys).to_pylist() == expected


def test_a_bad_key_says_what_the_key_columns_are(settings):
    fields = key_fields(settings, "spend_hourly")
    with pytest.raises(QueryError, match=r"needs 2 parts joined by commas \(customer_id, window"):
        parse_keys(["c1"], fields)
    with pytest.raises(QueryError, match="window_start is int64: 'soon' is not one"):
        parse_keys(["c1,soon"], fields)
    with pytest.raises(QueryError, match="JSON object with the key columns"):
        parse_keys(['{"customer_id": "c1"}'], fields)
    with pytest.raises(QueryError, match="needs 2 values, one per key column"):
        lookup(settings, "spend_hourly", ["c1"])
