"""A table's live rows by key, in the process that folds a batch into them (an executor's Python
worker, or the driver): how ``Accumulate`` reads the stored row of each key it changes.

A Delta data file never changes once written, and a row leaves the table only through a
deletion vector; so the live rows at a version are a pure function of the log. This cache holds
them at one version: the rows of every live file, and a :class:`KeyIndex` from key to the row
that is live. Asked for a later version, it reads only the log entries in between and the files
they add, so following a table costs what its batches hold; asked for an older version (a batch
replayed after a failed commit) or after its log entries were cleaned up, it rebuilds from the
table, which costs the table once. The rows read are the committed ones only: a batch's own
files join when the log says they were committed, so a retried batch folds into exactly what
its first attempt did.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from pyroaring import BitMap64

from streaming.define.table_kinds import TableKind
from streaming.delta import deletion_vectors as dvs
from streaming.delta.deletion_vectors import Descriptor
from streaming.delta.key_index import MISSING, KeyIndex, location, long_lived, split
from streaming.delta.log_entries import FileEntry, log_name, parse_entry
from streaming.delta.log_replay import replay
from streaming.delta.table_keys import key_array
from streaming.delta.table_store import TableLocation, TableStore
from streaming.errors import TableError

_EMPTY = np.zeros(0, dtype=np.int64)


@dataclass
class _File:
    entry: FileEntry
    rows: pa.Table  # every column, in file order, one chunk (see _add)
    keys: pa.Array  # the encoded key of each row
    deleted: BitMap64


class StoredRows:
    """The live rows of one table at :attr:`version` (see the module docstring)."""

    def __init__(self, location: TableLocation, schema: pa.Schema, kind: TableKind) -> None:
        self.store = TableStore(location)
        self.schema = schema
        self.kind = kind
        self.version = -1
        self.files: dict[str, _File] = {}
        self.index = KeyIndex()

    def at(self, version: int) -> StoredRows:
        """This cache moved to ``version`` (caught up, or rebuilt when it cannot be)."""
        if version == self.version:
            return self
        if 0 <= self.version < version:
            try:
                for next_version in range(self.version + 1, version + 1):
                    self._apply(self.store.read(log_name(next_version)))
                    self.version = next_version
                return self
            except TableError:  # an entry cleaned up meanwhile: rebuild from a checkpoint
                pass
        self._rebuild(version)
        return self

    def get(self, keys: pa.Array) -> tuple[pa.Table, pa.Array]:
        """The stored row of each key (nulls where none) and whether it has one."""
        found = self.index.lookup(keys.to_pylist())
        matched = found != MISSING
        pieces, where = [], []
        files, rows = split(found[matched])
        positions = np.flatnonzero(matched)
        for file_id in np.unique(files):
            here = files == file_id
            path = self.index.paths[file_id]
            assert path is not None
            pieces.append(self.files[path].rows.take(pa.array(rows[here])))
            where.append(positions[here])
        taken = pa.concat_tables(pieces) if pieces else self.schema.empty_table()
        order = np.full(len(keys), -1, dtype=np.int64)
        if where:
            order[np.concatenate(where)] = np.arange(taken.num_rows)
        stored = taken.take(pa.array(order, mask=order < 0)) if len(keys) else taken
        return stored.select(self.schema.names).cast(self.schema), pa.array(matched)

    # -- following the log ----------------------------------------------------------------------

    def _rebuild(self, version: int) -> None:
        snapshot = replay(self.store, up_to=version)
        self.files, self.index = {}, KeyIndex()
        for entry in snapshot.files.values():
            self._add(entry)
        self.version = snapshot.version
        long_lived()

    def _apply(self, content: bytes) -> None:
        """One log entry: its new files join the index (a key's new row, a compaction's file
        taking over its sources' keys), then rows its DVs and removes delete leave it, unless
        their key already points at a newer row."""
        removed: set[str] = set()
        added: list[FileEntry] = []
        for action in parse_entry(content):
            if "add" in action:
                added.append(FileEntry.from_add(action["add"]))
            elif "remove" in action:
                removed.add(action["remove"]["path"])
        readded = {entry.path for entry in added}
        for entry in added:
            if entry.path not in self.files:
                self._add(entry)
        for entry in added:
            known = self.files[entry.path]
            if known.entry is not entry and known.entry.deletion_vector != entry.deletion_vector:
                deleted = self._deleted(entry)
                # Without deletes, a row a DV deletes was replaced, and its key repointed above.
                if self.kind.deletes_rows:
                    self._unindex(entry.path, known, deleted - known.deleted)
                known.entry, known.deleted = entry, deleted
        for path in removed - readded:
            known = self.files.pop(path, None)
            if known is not None:
                if self.kind.deletes_rows:
                    self._unindex(path, known, BitMap64(range(known.entry.num_records)))
                self.index.forget_file(path)

    def _unindex(self, path: str, known: _File, rows: BitMap64) -> None:
        """Keys whose live row is one of ``rows`` of ``path`` lose it."""
        if not len(rows):
            return
        picked = dvs.to_numpy(rows).astype(np.int64)
        keys = known.keys.take(pa.array(picked)).to_pylist()
        at = location(self.index.ids[path], picked)
        stale = self.index.lookup(keys) == at
        self.index.drop([key for key, gone in zip(keys, stale.tolist(), strict=True) if gone])

    def _add(self, entry: FileEntry) -> None:
        # One chunk: Arrow's take on a chunked column concatenates its chunks first, which would
        # make each batch's lookup cost the whole file instead of the rows it takes.
        rows = self.store.read_parquet(entry.path).select(self.schema.names).combine_chunks()
        deleted = self._deleted(entry)
        keys = key_array(rows, self.kind.keys)
        live = None
        if len(deleted):
            live = np.ones(rows.num_rows, dtype=bool)
            live[dvs.to_numpy(deleted)] = False
        self.index.add_file(entry.path, keys, _EMPTY, _EMPTY, live)
        self.files[entry.path] = _File(entry, rows, keys, deleted)

    def _deleted(self, entry: FileEntry) -> BitMap64:
        descriptor: Descriptor | None = entry.deletion_vector
        if descriptor is None:
            return BitMap64()
        content = None if descriptor.storage_type == "i" else self.store.read(descriptor.file_name)
        return dvs.read_dv(descriptor, content)


_CACHES: dict[tuple[str, tuple[str, ...]], StoredRows] = {}
_LOCK = threading.Lock()


def stored_rows(
    location: TableLocation, schema: pa.Schema, kind: TableKind, version: int
) -> StoredRows:
    """This process's cache of the table's rows, at ``version``."""
    with _LOCK:
        name = (str(location), tuple(schema.names))
        cache = _CACHES.get(name)
        if cache is None or cache.schema != schema or cache.kind != kind:
            cache = _CACHES[name] = StoredRows(location, schema, kind)
        return cache.at(version)
