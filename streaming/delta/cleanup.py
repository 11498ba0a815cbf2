"""Removing the files of a deletion-vector table that no snapshot a reader may use references.

delta-rs' ``vacuum(full=True)`` cannot be used on these tables: it deletes DV files that live
files still reference. This cleanup keeps every data and DV file referenced by any version that
was current during the retention window (the snapshot at its start, plus every file added
since), so time travel, equal-offset comparisons and readers in the middle of a scan keep
working, and deletes the rest once it is older than the window: files that compaction or
deletes replaced, superseded DV files, and files of batches that died before their commit.
Only the table root's ``*.parquet`` and ``deletion_vector_*.bin`` files are ever deleted.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from datetime import datetime

from streaming.delta.deletion_vectors import Descriptor
from streaming.delta.dv_table import DvTable
from streaming.delta.log_entries import FileEntry, log_name, parse_entry
from streaming.delta.log_replay import replay
from streaming.delta.table_store import TableStore

_LOG_ENTRY = re.compile(r"^_delta_log/(\d{20})\.json$")
_OURS = re.compile(r"^(?:[^/]+\.parquet|deletion_vector_[^/]+\.bin)$")


def remove_unreferenced(
    table: DvTable,
    retention_s: float,
    also_keep: Callable[[], Iterable[str]] = lambda: (),
    now: float | None = None,
) -> list[str]:
    """Delete the table's unreferenced files older than ``retention_s``; returns their names.

    Runs beside the query: the deletion itself holds the table between batches, and spares the
    files of the table's current snapshot and whatever ``also_keep`` names (e.g. a compaction's
    file not yet committed).
    """
    store = table.store
    cutoff = (time.time() if now is None else now) - retention_s
    listing = list(store.list())
    versions = {int(m.group(1)): t for n, _, t in listing if (m := _LOG_ENTRY.match(n))}
    if not versions:
        return []
    candidates = {name for name, _, t in listing if _OURS.match(name) and _before(t, cutoff)}
    if not candidates:
        return []
    old = [v for v, t in versions.items() if _before(t, cutoff)]
    start = max(old) if old else min(versions)
    kept = _referenced(replay(store, up_to=start).files.values())
    for version in sorted(v for v in versions if v > start):
        kept |= _added(store, version)
    with table.writing:
        kept |= _referenced(table.snapshot.files.values())
        kept |= set(also_keep())
        doomed = sorted(candidates - kept)
        store.delete(doomed)
    return doomed


def _before(modified: datetime, cutoff: float) -> bool:
    return modified.timestamp() <= cutoff


def _referenced(entries: Iterable[FileEntry]) -> set[str]:
    names = set()
    for entry in entries:
        names.add(entry.path)
        dv = entry.deletion_vector
        if dv is not None and dv.storage_type == "u":
            names.add(dv.file_name)
    return names


def _added(store: TableStore, version: int) -> set[str]:
    """The data and DV files a log entry adds."""
    names = set()
    for action in parse_entry(store.read(log_name(version))):
        add = action.get("add")
        if add is None:
            continue
        names.add(add["path"])
        dv = add.get("deletionVector")
        if dv and dv.get("storageType") == "u":
            names.add(Descriptor.from_json(dv).file_name)
    return names
