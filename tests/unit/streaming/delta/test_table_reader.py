"""Which commit a compacted table's readers see as its latest."""

from __future__ import annotations

import pyarrow as pa
from deltalake import write_deltalake

from streaming.define.table_kinds import Accumulate
from streaming.delta.compacted_table import CompactedTable
from streaming.delta.table_reader import RECENT_ENTRIES, commits, last_end_offsets, latest_commit

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
