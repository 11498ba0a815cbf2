"""A table's live files with their deletion vectors, replayed from its Delta log.

delta-rs exposes no DV descriptors (``get_add_actions`` lists none, ``deletion_vectors()`` only
keep-masks), but the sink's next commit must remove each file it touches by its exact (path, DV)
pair. So the sink replays the log itself: the last checkpoint (delta-rs writes single-file
Parquet checkpoints), then every JSON entry after it. Files are keyed by (path, DV id) while
replaying, as the protocol says, and by path once the snapshot is known.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from streaming.delta.deletion_vectors import Descriptor
from streaming.delta.log_entries import FileEntry, log_name, parse_entry
from streaming.delta.table_store import TableStore
from streaming.errors import TableError

_JSON_ENTRY = re.compile(r"^_delta_log/(\d{20})\.json$")
_CHECKPOINT = re.compile(r"^_delta_log/(\d{20})\.checkpoint\.parquet$")


@dataclass
class LogSnapshot:
    """The newest version of a table as replayed from its log."""

    version: int = -1
    files: dict[str, FileEntry] = field(default_factory=dict)  # live files by path
    transactions: dict[str, int] = field(default_factory=dict)  # app id -> batch id
    timestamps: dict[int, int] = field(default_factory=dict)  # version -> commit time (ms)


def replay(store: TableStore, up_to: int | None = None) -> LogSnapshot:
    """The table's snapshot at ``up_to`` (default: its newest version), from the newest
    checkpoint at or below it and the JSON entries after that.

    Raises:
        TableError: the log is missing or has a gap.
    """
    names = [name for name, _, _ in store.list("_delta_log/")]
    entries = [int(m.group(1)) for m in map(_JSON_ENTRY.match, names) if m]
    checkpoints = [int(m.group(1)) for m in map(_CHECKPOINT.match, names) if m]
    usable = [v for v in checkpoints if up_to is None or v <= up_to]
    checkpoint = max(usable) if usable else None
    live: dict[tuple[str, str], FileEntry] = {}
    snapshot = LogSnapshot()
    if checkpoint is not None:
        _read_checkpoint(store, checkpoint, live, snapshot)
        snapshot.version = checkpoint
    later = sorted(v for v in entries if v > snapshot.version and (up_to is None or v <= up_to))
    for version in later:
        if version != snapshot.version + 1:
            msg = f"{store.location}: the Delta log has no entry for version {snapshot.version + 1}"
            raise TableError(msg)
        _apply_entry(store.read(log_name(version)), version, live, snapshot)
        snapshot.version = version
    if snapshot.version < 0:
        msg = f"{store.location} is not a Delta table (no log entries)"
        raise TableError(msg)
    snapshot.files = {entry.path: entry for entry in live.values()}
    if len(snapshot.files) != len(live):
        msg = f"{store.location}: a data file is live twice with different deletion vectors"
        raise TableError(msg)
    return snapshot


def _read_checkpoint(
    store: TableStore,
    version: int,
    live: dict[tuple[str, str], FileEntry],
    snapshot: LogSnapshot,
) -> None:
    name = f"_delta_log/{version:020d}.checkpoint.parquet"
    table = pq.read_table(pa.py_buffer(store.read(name)), columns=["add", "txn"])
    for add in table["add"].drop_null().to_pylist():
        entry = FileEntry.from_add(_without_nulls(add))
        live[entry.key] = entry
    for txn in table["txn"].drop_null().to_pylist():
        snapshot.transactions[txn["appId"]] = int(txn["version"])


def _apply_entry(
    content: bytes,
    version: int,
    live: dict[tuple[str, str], FileEntry],
    snapshot: LogSnapshot,
) -> None:
    for action in parse_entry(content):
        if "add" in action:
            entry = FileEntry.from_add(action["add"])
            live[entry.key] = entry
        elif "remove" in action:
            removed = action["remove"]
            dv = removed.get("deletionVector")
            dv_id = Descriptor.from_json(dv).unique_id if dv else ""
            live.pop((removed["path"], dv_id), None)
        elif "txn" in action:
            snapshot.transactions[action["txn"]["appId"]] = int(action["txn"]["version"])
        elif "commitInfo" in action:
            snapshot.timestamps[version] = int(action["commitInfo"].get("timestamp") or 0)


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    return value
