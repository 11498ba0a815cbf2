"""Which commit a compacted table's readers see as its latest."""

from __future__ import annotations

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from streaming.define.table_kinds import Accumulate
from streaming.delta.compacted_table import CompactedTable
from streaming.delta.table_reader import (
    RECENT_ENTRIES,
    commits,
    last_end_offsets,
    latest_commit,
    latest_commit_of,
)

SCHEMA = pa.schema([("id", pa.string()), ("v", pa.string())])


def test_latest_commit_is_the_last_batch_even_behind_other_log_entries(tmp_path):
    path = tmp_path / "t"
    assert latest_commit(path) is None and last_end_offsets(path) is None
    table = CompactedTable(path, SCHEMA, Accumulate("id", {"v": "s.v"}), "app")
    table.version()
    assert latest_commit(path) is None  # created, nothing committed yet
    row = pa.Table.from_pylist([{"id": "a", "v": "x"}], schema=SCHEMA)
    for batch_id in range(3):
        table.apply(row, batch_id, {"t": {"0": batch_id + 1}}, "d", fingerprint="fp")
    for _ in range(RECENT_ENTRIES + 5):  # more than the recent window, none of them a batch
        write_deltalake(str(path), SCHEMA.empty_table(), mode="append")
    latest = latest_commit(path)
    assert latest == commits(path)[-1]
    assert (latest.batch_id, latest.fingerprint) == (2, "fp")
    assert last_end_offsets(path) == {"t": {0: 3}}


def test_a_commit_landing_after_the_table_was_opened_keeps_its_own_version(tmp_path):
    """delta-rs numbers history entries from the version the table object was loaded at; a
    commit after the load must not shift the versions the readers pair with offsets."""
    path = tmp_path / "t"
    table = CompactedTable(path, SCHEMA, Accumulate("id", {"v": "s.v"}), "app")
    row = pa.Table.from_pylist([{"id": "a", "v": "x"}], schema=SCHEMA)
    table.apply(row, 0, {"t": {"0": 1}}, "d", fingerprint="fp")
    opened = DeltaTable(str(path))
    table.apply(row, 1, {"t": {"0": 2}}, "d", fingerprint="fp")  # lands after the open

    latest = latest_commit_of(opened)
    assert latest is not None and latest.end_offsets == {"t": {0: 2}}
    newest_entry = max(int(p.stem) for p in (path / "_delta_log").glob("*.json"))
    assert latest.table_version == newest_entry
    by_offsets = {c.end_offsets["t"][0]: c.table_version for c in commits(path)}
    assert by_offsets == {1: newest_entry - 1, 2: newest_entry}
