"""A published log entry reads back as the actions that were published, in order."""

from __future__ import annotations

from pathlib import Path

import pytest

from streaming.delta.commit_info import commit_info as batch_info
from streaming.delta.log_entries import commit_info, log_name, parse_entry, publish, txn
from streaming.delta.table_store import CommitConflictError, TableLocation, TableStore


def test_a_published_entry_reads_back_as_its_actions_in_order(tmp_path: Path):
    store = TableStore(TableLocation.of(tmp_path))
    published = [
        commit_info("WRITE", 0, batch_info(3, {"customers": {"0": 5}}, "customers__v1", "fp")),
        txn("app", 3),
        {"add": {"path": "part-1.parquet", "size": 10, "stats": '{"numRecords":2}'}},
    ]
    publish(store, 1, published)

    assert parse_entry(store.read(log_name(1))) == published
    # a second writer of the same version loses, and the entry is unchanged
    with pytest.raises(CommitConflictError):
        publish(store, 1, published[:1])
    assert parse_entry(store.read(log_name(1))) == published


def test_blank_lines_other_writers_leave_are_not_actions():
    assert parse_entry(b'{"txn":{"appId":"a","version":1}}\n\n  \n{"remove":{"path":"p"}}\n') == [
        {"txn": {"appId": "a", "version": 1}},
        {"remove": {"path": "p"}},
    ]
