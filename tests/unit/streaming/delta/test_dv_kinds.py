"""``ChangeRows`` (one key column and composite keys) and ``Accumulate`` on the deletion-vector
sink, against plain-Python references, read back by delta-rs, polars and a rebuilt index.

Batches arrive as several shares (as Spark tasks write them). ``Accumulate`` folds each share
into the stored rows read by key (``streaming.delta.stored_rows``), so these tests also follow
that cache across commits, compactions, a reopened process and a retried batch.
"""

from __future__ import annotations

import random
from decimal import Decimal
from typing import Any

import polars as pl
import pyarrow as pa
import pytest

from streaming.define.table_kinds import Accumulate, ChangeRows, WriteStrategy
from streaming.delta import stored_rows as stored_rows_module
from streaming.delta.compacted_table import CompactedTable
from streaming.delta.file_compaction import CompactionPolicy
from streaming.delta.maintenance import MaintenancePolicy
from streaming.delta.stored_rows import StoredRows
from streaming.delta.table_keys import key_array
from streaming.delta.table_reader import read_arrow
from streaming.errors import TableError

WINDOWS = pa.schema(
    [
        ("customer_id", pa.string()),
        ("window_start", pa.int64()),
        ("txn_count", pa.int64()),
        ("total", pa.decimal128(18, 2)),
    ]
)
WINDOW_KIND = ChangeRows("customer_id", also=("window_start",))
SPEND = pa.schema(
    [
        ("customer_id", pa.string()),
        ("txn_count", pa.int64()),
        ("total_amount", pa.decimal128(18, 2)),
        ("last_txn_ts", pa.int64()),
    ]
)
SPEND_KIND = Accumulate(
    key="customer_id",
    updates={
        "txn_count": "t.txn_count + s.txn_count",
        "total_amount": "t.total_amount + s.total_amount",
        "last_txn_ts": "greatest(t.last_txn_ts, s.last_txn_ts)",
    },
)
SMALL = CompactionPolicy(max_deleted_fraction=0.1, small_file_rows=50, min_small_files=3)

Row = dict[str, Any]


def _manual(compaction: CompactionPolicy = SMALL, **kwargs: Any) -> MaintenancePolicy:
    settings = {"compact_every": 10**9, "checkpoint_every": 10**9, "cleanup_every": 10**9}
    return MaintenancePolicy(compaction=compaction, background=False, **(settings | kwargs))


# Every file is small: each compaction rewrites them all, the previous compaction's file too.
ALL_SMALL = CompactionPolicy(small_file_rows=10**6, min_small_files=2)


def _apply_in_shares(table: CompactedTable, rows: list[Row], batch_id: int, shares: int) -> None:
    """Write the batch as ``shares`` shares (a key's rows in one share), then commit them."""
    parts: list[list[Row]] = [[] for _ in range(shares)]
    for row in rows:
        parts[hash(row["customer_id"]) % shares].append(row)
    schema = table.kind.change_schema(table.schema)
    with table.batch():
        version = table.version()
        written = [
            table.share_writer().write(pa.Table.from_pylist(p, schema), batch_id, version)
            for p in parts
        ]
    table.commit_shares(pa.concat_tables(written), batch_id, {"t": {"0": batch_id}}, "d")


def _readers(table: CompactedTable, key: tuple[str, ...]) -> dict[str, dict]:
    where = str(table.location)

    def keyed(arrow: pa.Table) -> dict:
        rows = arrow.to_pylist()
        out = {tuple(r[k] for k in key): r for r in rows}
        assert len(out) == len(rows), "a key has two live rows"
        return out

    out = {"delta-rs": keyed(read_arrow(where)), "polars": keyed(pl.read_delta(where).to_arrow())}
    reopened = CompactedTable(where, table.schema, table.kind, "other", _manual())
    assert reopened._dv is not None
    index = reopened._dv.open().index.locations
    expected = key_array(read_arrow(where), key).to_pylist()
    assert sorted(index) == sorted(expected), "the rebuilt index names other keys"
    return out


def _window_batch(rng: random.Random, keys: list[tuple[str, int]], batch_id: int) -> list[Row]:
    rows = []
    for customer, start in rng.sample(keys, 40):
        if rng.random() < 0.25:
            rows.append({"customer_id": customer, "window_start": start, "_delete": True})
            continue
        n = rng.randint(1, 99)
        total = Decimal(n * 101 + batch_id).scaleb(-2)
        row = {"customer_id": customer, "window_start": start, "txn_count": n, "total": total}
        rows.append({**row, "_delete": False})
    return rows


def test_composite_change_rows_equal_the_reference_for_every_reader(tmp_path):
    policy = _manual(ALL_SMALL, retention_s=0)
    table = CompactedTable(tmp_path / "t", WINDOWS, WINDOW_KIND, "app", policy)
    assert table.writes_shares
    # The same customer in several windows, and window starts that read alike as text.
    keys = [(f"c{c}", h * 3_600_000) for c in range(8) for h in range(8)] + [("c1", 1), ("c11", 1)]
    rng, expected = random.Random(3), {}
    for batch_id in range(14):
        batch = _window_batch(rng, keys, batch_id)
        _apply_in_shares(table, batch, batch_id, shares=1 + batch_id % 3)
        for row in batch:
            key = (row["customer_id"], row["window_start"])
            if row.pop("_delete"):
                expected.pop(key, None)
            else:
                expected[key] = row
        if batch_id == 3:  # a new process: the files so far are indexed from the table
            table = CompactedTable(table.location, WINDOWS, WINDOW_KIND, "app", policy)
        if batch_id >= 6:  # each compaction rewrites the previous one's file too
            assert table.maintenance is not None
            done = table.maintenance.stats.compactions
            table.maintenance.compact_now()
            assert table.maintenance.stats.compactions == done + 1
            table.maintenance.cleanup_now()
            # A table without stored positions keeps none in its index, whatever wrote a file.
            assert table._dv is not None
            assert not any(len(table._dv.index.file_positions(p)[0]) for p in table._dv.index.ids)
        for reader, got in _readers(table, WINDOW_KIND.keys).items():
            assert got == expected, f"{reader} after batch {batch_id}"


def test_a_key_changed_by_two_shares_of_one_batch_is_refused(tmp_path):
    table = CompactedTable(tmp_path / "t", WINDOWS, WINDOW_KIND, "app", _manual())
    row = {"customer_id": "c1", "window_start": 0, "txn_count": 1, "total": Decimal(1)}
    schema = WINDOW_KIND.change_schema(WINDOWS)
    with table.batch():
        shares = [
            table.share_writer().write(pa.Table.from_pylist([{**row, "_delete": False}], schema), 0)
            for _ in range(2)
        ]
    with pytest.raises(TableError, match="changed twice in one batch"):
        table.commit_shares(pa.concat_tables(shares), 0, {}, "d")
    assert table.committed_batch() is None


class Spend:
    """The reference of customer_spend's Accumulate: counts and sums add up, the time is the
    greatest."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str], Row] = {}

    def fold(self, batch: list[Row]) -> None:
        for row in batch:
            old = self.rows.get((row["customer_id"],))
            if old is None:
                self.rows[(row["customer_id"],)] = dict(row)
                continue
            self.rows[(row["customer_id"],)] = {
                "customer_id": row["customer_id"],
                "txn_count": old["txn_count"] + row["txn_count"],
                "total_amount": old["total_amount"] + row["total_amount"],
                "last_txn_ts": max(old["last_txn_ts"], row["last_txn_ts"]),
            }


def _spend_batch(rng: random.Random, batch_id: int) -> list[Row]:
    return [
        {
            "customer_id": key,
            "txn_count": rng.randint(1, 5),
            "total_amount": Decimal(rng.randint(1, 99_999)).scaleb(-2),
            "last_txn_ts": rng.randint(0, 10**12),
        }
        for key in rng.sample([f"s{i:03d}" for i in range(120)], 30 + batch_id % 20)
    ]


def test_accumulate_folds_into_the_stored_rows_read_by_key(tmp_path):
    assert SPEND_KIND.write_strategy is WriteStrategy.UPSERT_DELETE
    table = CompactedTable(tmp_path / "t", SPEND, SPEND_KIND, "app", _manual(retention_s=0))
    rng, reference = random.Random(5), Spend()
    for batch_id in range(16):
        batch = _spend_batch(rng, batch_id)
        _apply_in_shares(table, batch, batch_id, shares=1 + batch_id % 3)
        reference.fold(batch)
        if batch_id in (6, 12):
            assert table.maintenance is not None
            table.maintenance.compact_now()
            table.maintenance.checkpoint_now()
            table.maintenance.cleanup_now()
        for reader, got in _readers(table, SPEND_KIND.keys).items():
            assert got == reference.rows, f"{reader} after batch {batch_id}"
    assert table.maintenance is not None and table.maintenance.stats.compactions == 2


def _spend_rows(rng: random.Random, batch_id: int) -> list[Row]:
    return _spend_batch(rng, batch_id)


def _window_rows(rng: random.Random, batch_id: int) -> list[Row]:
    keys = [(f"c{c}", h * 3_600_000) for c in range(8) for h in range(8)]
    return _window_batch(rng, keys, batch_id)


@pytest.mark.parametrize(
    ("schema", "kind", "batch"),
    [(SPEND, SPEND_KIND, _spend_rows), (WINDOWS, WINDOW_KIND, _window_rows)],
    ids=["accumulate", "change-rows-with-deletes"],
)
def test_stored_rows_caught_up_from_the_log_equal_a_rebuild_at_every_version(
    tmp_path, schema, kind, batch
):
    table = CompactedTable(tmp_path / "t", schema, kind, "app", _manual(retention_s=0))
    rng = random.Random(8)
    follower = StoredRows(table.location, schema, kind)
    for batch_id in range(10):
        rows = batch(rng, batch_id)
        _apply_in_shares(table, rows, batch_id, shares=2)
        if batch_id % 3 == 2:
            assert table.maintenance is not None
            table.maintenance.compact_now()
        version = table.version()
        keys = key_array(pa.Table.from_pylist(rows, kind.change_schema(schema)), kind.keys)
        followed = follower.at(version).get(keys)
        rebuilt = StoredRows(table.location, schema, kind).at(version).get(keys)
        assert followed[0].equals(rebuilt[0]) and followed[1].equals(rebuilt[1])
        assert follower.version == version
        assert sorted(follower.index.locations) == sorted(rebuilt_keys(table, kind))


def rebuilt_keys(table: CompactedTable, kind: Any) -> list:
    return key_array(read_arrow(str(table.location)), kind.keys).to_pylist()


def test_a_retried_batch_folds_into_what_its_first_attempt_did(tmp_path):
    table = CompactedTable(tmp_path / "t", SPEND, SPEND_KIND, "app", _manual())
    rng, reference = random.Random(9), Spend()
    first = _spend_batch(rng, 0)
    _apply_in_shares(table, first, 0, shares=2)
    reference.fold(first)
    second = _spend_batch(rng, 1)
    with table.batch():  # the tasks wrote their files, then the driver died before the commit
        version = table.version()
        table.share_writer().write(pa.Table.from_pylist(second, SPEND), 1, version)
    restarted = CompactedTable(tmp_path / "t", SPEND, SPEND_KIND, "app", _manual())
    _apply_in_shares(restarted, second, 1, shares=3)
    reference.fold(second)
    assert _readers(restarted, SPEND_KIND.keys)["delta-rs"] == reference.rows


def test_accumulate_with_sql_beyond_column_arithmetic_is_merged(tmp_path):
    kind = Accumulate("customer_id", {"txn_count": "CASE WHEN t.txn_count > 0 THEN 1 END"})
    assert kind.write_strategy is WriteStrategy.MERGE
    table = CompactedTable(tmp_path / "t", SPEND, kind, "app")
    assert not table.writes_shares


@pytest.fixture(autouse=True)
def _fresh_caches():
    """Each test starts without this process's cached stored rows of other tests' tables."""
    stored_rows_module._CACHES.clear()
    yield
    stored_rows_module._CACHES.clear()
