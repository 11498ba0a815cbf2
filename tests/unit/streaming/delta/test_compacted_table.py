"""Compaction semantics of the Delta sink, driven directly with Arrow change batches."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from streaming.define.table_kinds import Accumulate, LatestPerKey, TableKind, latest_per_key
from streaming.delta.compacted_table import CompactedTable
from streaming.delta.table_reader import read_arrow

SCHEMA = pa.schema([("id", pa.string()), ("v", pa.string()), ("p", pa.int32()), ("o", pa.int64())])
KIND = LatestPerKey("id", position=("p", "o"))


def _changes(rows):  # rows: (id, v, partition, offset, delete)
    data = [
        {"id": i, "v": v, "p": p, "o": o, "_partition": p, "_offset": o, "_delete": d}
        for i, v, p, o, d in rows
    ]
    return pa.Table.from_pylist(data, schema=KIND.change_schema(SCHEMA))


def _state(table: CompactedTable) -> dict:
    return {r["id"]: r["v"] for r in read_arrow(table.location).to_pylist()}


def test_upserts_deletes_and_recreations(tmp_path):
    table = CompactedTable(tmp_path / "t", SCHEMA, KIND, "app")
    table.apply(_changes([("a", "1", 0, 0, False), ("b", "1", 1, 0, False)]), 0, {}, "d")
    table.apply(_changes([("a", None, 0, 1, True), ("b", "2", 1, 1, False)]), 1, {}, "d")
    assert _state(table) == {"b": "2"}
    table.apply(_changes([("a", "3", 0, 2, False)]), 2, {}, "d")
    assert _state(table) == {"a": "3", "b": "2"}


def test_a_committed_batch_is_never_applied_twice(tmp_path):
    table = CompactedTable(tmp_path / "t", SCHEMA, Accumulate("id", {"v": "t.v || s.v"}), "app")
    plain = pa.Table.from_pylist([{"id": "a", "v": "x", "p": 0, "o": 0}], schema=SCHEMA)
    first = table.apply(plain, 0, {"t": {"0": 1}}, "d")
    again = table.apply(plain, 0, {"t": {"0": 1}}, "d")
    assert not first.skipped and again.skipped
    table.apply(plain, 1, {"t": {"0": 2}}, "d")
    assert _state(table) == {"a": "xx"}
    assert table.committed_batch() == 1


def test_an_older_position_never_replaces_a_newer_row(tmp_path):
    table = CompactedTable(tmp_path / "t", SCHEMA, KIND, "app")
    table.apply(_changes([("a", "new", 3, 10, False)]), 0, {}, "d")
    table.apply(_changes([("a", "old", 1, 50, False)]), 1, {}, "d")
    assert _state(table) == {"a": "new"}


def test_an_empty_batch_still_records_its_offsets(tmp_path):
    table = CompactedTable(tmp_path / "t", SCHEMA, KIND, "app")
    created = table.version()
    result = table.apply(_changes([]), 0, {"t": {"0": 7}}, "d")
    assert table.committed_batch() == 0
    assert result.table_version == created + 1
    # a delete of a key that never existed changes nothing but is recorded too
    table.apply(_changes([("zz", None, 0, 7, True)]), 1, {"t": {"0": 8}}, "d")
    assert table.committed_batch() == 1 and _state(table) == {}


def test_the_first_batch_into_an_empty_table_is_appended_without_tombstones(tmp_path):
    table = CompactedTable(tmp_path / "t", SCHEMA, KIND, "app")
    table.apply(
        _changes([("a", "1", 0, 0, False), ("b", None, 0, 1, True)]), 0, {"t": {"0": 2}}, "d"
    )
    assert _state(table) == {"a": "1"}
    assert table.committed_batch() == 0
    again = table.apply(_changes([("c", "1", 0, 2, False)]), 0, {"t": {"0": 3}}, "d")
    assert again.skipped and _state(table) == {"a": "1"}


def test_latest_per_key_keeps_the_highest_partition_and_offset():
    rows = [
        ("a", "old", 0, 5, False),
        ("b", "x", 1, 1, False),
        ("a", "new", 2, 0, False),
        ("b", None, 1, 9, True),
        ("a", "mid", 0, 7, False),
    ]
    latest = latest_per_key(_changes(rows), "id").to_pylist()
    assert sorted((r["id"], r["v"], r["_delete"]) for r in latest) == [
        ("a", "new", False),
        ("b", None, True),
    ]


@dataclass(frozen=True)
class FirstPerKey(TableKind):
    """A kind the sink has never heard of: the first row per key stays."""

    key: str

    def merge(self, merger, columns):  # type: ignore[no-untyped-def]
        return merger.when_not_matched_insert(updates=columns)


def test_a_new_table_kind_needs_no_change_to_the_sink(tmp_path):
    table = CompactedTable(tmp_path / "t", SCHEMA, FirstPerKey("id"), "app")
    first = pa.Table.from_pylist([{"id": "a", "v": "1", "p": 0, "o": 0}], schema=SCHEMA)
    later = pa.Table.from_pylist(
        [{"id": "a", "v": "2", "p": 0, "o": 1}, {"id": "b", "v": "3", "p": 0, "o": 2}],
        schema=SCHEMA,
    )
    table.apply(first, 0, {}, "d")
    table.apply(later, 1, {}, "d")
    assert _state(table) == {"a": "1", "b": "3"}
