"""Rows by key from a warm process: the index follows every commit of a table written with
deletion vectors (deletes, re-creations, keys moving partition, compaction and cleanup), and of
a table whose files are rewritten, and answers what a plain-Python reference holds."""

from __future__ import annotations

import random

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from streaming.define.table_kinds import LatestPerKey
from streaming.delta.compacted_table import CompactedTable
from streaming.delta.file_compaction import CompactionPolicy
from streaming.delta.maintenance import MaintenancePolicy
from streaming.delta.table_store import TableLocation
from streaming.query.lookup import TableIndex, _FileCache

SCHEMA = pa.schema([("id", pa.string()), ("v", pa.int64()), ("p", pa.int32()), ("o", pa.int64())])
KIND = LatestPerKey("id", position=("p", "o"))
MANUAL = MaintenancePolicy(
    compaction=CompactionPolicy(max_deleted_fraction=0.1, small_file_rows=50, min_small_files=3),
    background=False,
    compact_every=10**9,
    checkpoint_every=10**9,
    cleanup_every=10**9,
    retention_s=0,
)


def _changes(rng: random.Random, offsets: list[int], keys: int, size: int) -> list[tuple]:
    """(key, partition, offset, value or None to delete): keys change partition and come back."""
    out = []
    for _ in range(size):
        p = rng.randrange(3)
        offsets[p] += 1
        value = None if rng.random() < 0.25 else offsets[p] * 10 + p
        out.append((f"k{rng.randrange(keys):03d}", p, offsets[p], value))
    return out


def _reference(stored: dict[str, tuple], changes: list[tuple]) -> None:
    """Latest per key by (partition, offset); a delete forgets the key's position."""
    for key, p, o, value in sorted(changes, key=lambda c: (c[1], c[2])):
        known = stored.get(key)
        if known is not None and (known[1], known[2]) >= (p, o):
            continue
        if value is None:
            stored.pop(key, None)
        else:
            stored[key] = (key, p, o, value)


def _apply(table: CompactedTable, changes: list[tuple], batch_id: int) -> None:
    rows = [
        {"id": k, "v": v, "p": p, "o": o, "_partition": p, "_offset": o, "_delete": v is None}
        for k, p, o, v in changes
    ]
    table.apply(pa.Table.from_pylist(rows, schema=KIND.change_schema(SCHEMA)), batch_id, {}, "d")


def _as_dict(rows: pa.Table) -> dict[str, tuple]:
    return {r["id"]: (r["id"], r["p"], r["o"], r["v"]) for r in rows.to_pylist()}


def test_the_index_follows_every_commit_of_a_deletion_vector_table(tmp_path):
    table = CompactedTable(tmp_path / "t", SCHEMA, KIND, "app", MANUAL)
    rng, offsets, stored = random.Random(17), [0, 0, 0], {}
    _apply(table, _changes(rng, offsets, 60, 1), 0)
    index = TableIndex(TableLocation.of(tmp_path / "t"), ["id"], _FileCache(1 << 20))
    every_key = [(f"k{i:03d}",) for i in range(60)]
    deleted, recreated = set(), set()
    for batch_id in range(1, 25):
        changes = _changes(rng, offsets, 60, 40)
        before = set(stored)
        _reference(stored, changes)
        deleted |= before - set(stored)
        recreated |= (set(stored) - before) & deleted
        if batch_id in (8, 16):
            assert table.maintenance is not None
            table.maintenance.compact_now()
            table.maintenance.cleanup_now()
        _apply(table, changes, batch_id)
        index.refresh()
        assert _as_dict(index.rows(every_key)) == stored, f"after batch {batch_id}"
        one = rng.choice(every_key)
        assert _as_dict(index.rows([one])) == {k: v for k, v in stored.items() if (k,) == one}
    assert recreated, "no key came back after a delete"
    assert index.rows([("nope",)]).num_rows == 0


def test_the_index_follows_rewritten_files_and_composite_keys(tmp_path):
    schema = pa.schema([("c", pa.string()), ("w", pa.int64()), ("n", pa.int64())])
    where = str(tmp_path / "agg")

    def rows(items: dict[tuple[str, int], int]) -> pa.Table:
        return pa.Table.from_pylist(
            [{"c": c, "w": w, "n": n} for (c, w), n in items.items()], schema=schema
        )

    write_deltalake(where, rows({("a", 0): 1, ("a", 60): 2, ("b", 0): 3}))
    index = TableIndex(TableLocation.of(where), ["c", "w"], _FileCache(1 << 20))
    index.refresh()
    asked = [("b", 0), ("a", 60), ("a", 0), ("a", 120)]
    assert index.rows(asked).to_pylist() == [
        {"c": "b", "w": 0, "n": 3},
        {"c": "a", "w": 60, "n": 2},
        {"c": "a", "w": 0, "n": 1},
    ]
    DeltaTable(where).delete("c = 'a' AND w = 60")  # rewrites the file without that row
    write_deltalake(where, rows({("a", 120): 4}), mode="append")
    index.refresh()
    assert [(r["c"], r["w"], r["n"]) for r in index.rows(asked).to_pylist()] == [
        ("b", 0, 3),
        ("a", 0, 1),
        ("a", 120, 4),
    ]
