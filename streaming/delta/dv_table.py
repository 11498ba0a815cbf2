"""An upsert/delete table written with deletion vectors: each batch costs what the batch holds.

Per batch: the batch's shares are already written as new data files (on the executors or here);
their keys are looked up in the in-memory :class:`KeyIndex`, the replaced and deleted rows are
marked in the deletion vectors of the files holding them (all of one commit's DVs in one DV
file), and one log entry publishes it all put-if-absent with the application transaction
``(app_id, batch_id)`` and the commit info. The data files already in the table are never
rewritten by a batch, so its cost does not grow with the table. Background maintenance
(``streaming.delta.maintenance``) compacts, checkpoints and removes unreferenced files.

Exactly once: a batch whose id is not above the table's transaction version is skipped; files
written by a batch that died before its commit are never referenced and are cleaned up later.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from deltalake import DeltaTable
from pyroaring import BitMap64

from streaming.define.table_kinds import TableKind
from streaming.delta import deletion_vectors as dvs
from streaming.delta.batch_resolution import Changes, resolve
from streaming.delta.data_files import ShareWriter, duplicate_key_message
from streaming.delta.key_index import KeyIndex, long_lived
from streaming.delta.log_entries import FileEntry, commit_info, publish, txn
from streaming.delta.log_replay import LogSnapshot, replay
from streaming.delta.table_keys import key_array
from streaming.delta.table_store import CommitConflictError, TableLocation, TableStore


@dataclass(frozen=True)
class BatchCommit:
    """What committing one batch did."""

    skipped: bool
    table_version: int
    touched_files: int = 0
    deleted_rows: int = 0


class DvTable:
    """One deployment's upsert/delete table. Opened (index built) on first use."""

    def __init__(
        self, location: TableLocation, schema: pa.Schema, kind: TableKind, app_id: str
    ) -> None:
        self.location = location
        self.schema = schema
        self.kind = kind
        self.app_id = app_id
        self.store = TableStore(location)
        self.writer = ShareWriter(location, schema, kind)
        self.snapshot = LogSnapshot()
        self.deleted: dict[str, BitMap64] = {}  # live file -> rows its DV deletes
        self.index = KeyIndex()
        self.opened = False
        # Live rows at the last published commit, readable while a batch holds the table.
        self.live_rows = 0
        # Held from the moment a batch writes files until its commit is published, so cleanup
        # never deletes a file that a commit is about to reference.
        self.writing = threading.RLock()

    # -- opening ------------------------------------------------------------------------------

    def open(self) -> DvTable:
        """Create the table if missing; replay its log and rebuild the key index."""
        if not self.store.exists("_delta_log/00000000000000000000.json"):
            create_dv_table(self.location, self.schema)
        ensure_dv_feature(self.location)
        self.snapshot = replay(self.store)
        self.deleted, self.index = {}, KeyIndex()
        for entry in self.snapshot.files.values():
            self._index_stored(entry)
        self.recount_live_rows()
        self.opened = True
        long_lived()
        return self

    def _index_stored(self, entry: FileEntry) -> None:
        deleted = BitMap64()
        if entry.deletion_vector is not None:
            descriptor = entry.deletion_vector
            content = None if descriptor.storage_type == "i" else self._dv_file(descriptor)
            deleted = dvs.read_dv(descriptor, content)
        self.deleted[entry.path] = deleted
        part, offset = self.kind.position or ("_partition", "_offset")
        columns = [*self.kind.keys, *((part, offset) if self.kind.position else ())]
        rows = self.store.read_parquet(entry.path, columns)
        live = None
        if len(deleted):
            live = np.ones(rows.num_rows, dtype=bool)
            live[dvs.to_numpy(deleted)] = False
        if self.kind.position:
            partitions, offsets = rows[part].to_numpy(), rows[offset].to_numpy()
        else:  # without a stored position any change replaces the row: none is kept
            partitions = offsets = np.zeros(0, dtype=np.int64)
        self.index.add_file(entry.path, key_array(rows, self.kind.keys), partitions, offsets, live)

    def _dv_file(self, descriptor: dvs.Descriptor) -> bytes:
        return self.store.read(descriptor.file_name)

    def _opened(self) -> DvTable:
        return self if self.opened else self.open()

    # -- batches ------------------------------------------------------------------------------

    def committed_batch(self) -> int | None:
        return self._opened().snapshot.transactions.get(self.app_id)

    @property
    def version(self) -> int:
        return self._opened().snapshot.version

    def row_count(self) -> int:
        """Live rows at the last published commit.

        Does not wait for a batch in progress: a deployment whose batch is slow or stuck must
        go on reporting, or it could never be seen as stalled.
        """
        if not self.opened:
            with self.writing:  # the first use opens the table, as a batch would
                self._opened()
        return self.live_rows

    def recount_live_rows(self) -> None:
        """Every live file's rows minus those its DV deletes; called with the table held."""
        files = self.snapshot.files
        self.live_rows = sum(e.num_records - len(self.deleted[p]) for p, e in files.items())

    @contextmanager
    def batch(self) -> Iterator[DvTable]:
        """Hold the table for one batch: from writing its files to publishing its commit."""
        with self.writing:
            yield self._opened()

    def apply(self, changes: pa.Table, batch_id: int, info: dict[str, str]) -> BatchCommit:
        """Write and commit one batch of changes here (the driver holds all of them)."""
        with self.batch():
            if self._done(batch_id):
                return BatchCommit(True, self.snapshot.version)
            return self.commit(self.writer.write(changes, batch_id), batch_id, info)

    def commit(self, shares: pa.Table, batch_id: int, info: dict[str, str]) -> BatchCommit:
        """Commit a batch whose shares are written (``streaming.delta.data_files``)."""
        with self.batch():
            if self._done(batch_id):
                return BatchCommit(True, self.snapshot.version)
            try:
                return self._commit(shares, batch_id, info)
            except CommitConflictError:
                # Another writer published this version: start again from the table as it is.
                self.open()
                if self._done(batch_id):
                    return BatchCommit(True, self.snapshot.version)
                return self._commit(shares, batch_id, info)

    def _done(self, batch_id: int) -> bool:
        done = self._opened().snapshot.transactions.get(self.app_id)
        return done is not None and done >= batch_id

    def _commit(self, shares: pa.Table, batch_id: int, info: dict[str, str]) -> BatchCommit:
        changes = Changes.of(shares)
        duplicates = None if self.kind.orders_changes else duplicate_key_message(self.kind)
        resolution = resolve(self.index, changes, self.kind.position is not None, duplicates)
        touched: list[tuple[FileEntry, BitMap64]] = []  # stored files and their new DV
        for file_id, rows in resolution.stored_deletes.items():
            path = self.index.paths[file_id]
            assert path is not None
            deleted = BitMap64(self.deleted[path])
            deleted.update(rows.tolist())
            touched.append((self.snapshot.files[path], deleted))
        fresh: list[tuple[int, FileEntry, BitMap64]] = []  # new files, their share and DV
        for share, entry in enumerate(_new_entries(shares)):
            if entry is not None:
                rows = resolution.new_deletes.get(share)
                deleted = BitMap64(rows.tolist()) if rows is not None else BitMap64()
                fresh.append((share, entry, deleted))
        actions, updated, gone = self._actions(touched, fresh)
        head = [commit_info("WRITE", self.snapshot.version, info), txn(self.app_id, batch_id)]
        publish(self.store, self.snapshot.version + 1, head + actions)
        deleted_rows = sum(len(d) - len(self.deleted[e.path]) for e, d in touched)
        self._advance(batch_id, updated, gone, fresh, changes, resolution.drop_keys)
        return BatchCommit(False, self.snapshot.version, len(touched), deleted_rows)

    def _actions(
        self,
        touched: list[tuple[FileEntry, BitMap64]],
        fresh: list[tuple[int, FileEntry, BitMap64]],
    ) -> tuple[list[dict], list[tuple[FileEntry, BitMap64]], list[FileEntry]]:
        """The log actions of a batch; writes its DV file. Returns (actions, files with a new
        DV as their new entries, files that lost every row)."""
        kept = [(e, d) for e, d in touched if len(d) < e.num_records]
        gone = [e for e, d in touched if len(d) >= e.num_records]
        born = [(e, d) for _, e, d in fresh if 0 < len(d) < e.num_records]
        with_dv = kept + born
        dv_file = dvs.build_dv_file([d for _, d in with_dv]) if with_dv else None
        if dv_file is not None:
            self.store.write(dv_file.name, dv_file.content)
        descriptors = dv_file.descriptors if dv_file else []
        described = dict(zip((e.path for e, _ in with_dv), descriptors, strict=True))
        actions: list[dict] = []
        updated: list[tuple[FileEntry, BitMap64]] = []
        for entry, deleted in kept:
            new = entry.with_dv(described[entry.path])
            actions += [entry.remove(), new.add()]
            updated.append((new, deleted))
        actions += [entry.remove() for entry in gone]
        for _, entry, deleted in fresh:
            if len(deleted) >= entry.num_records:
                continue  # every row lost to a later change: the file is never referenced
            new = entry.with_dv(described[entry.path]) if len(deleted) else entry
            actions.append(new.add())
            updated.append((new, deleted))
        return actions, updated, gone

    def _advance(
        self,
        batch_id: int,
        updated: list[tuple[FileEntry, BitMap64]],
        gone: list[FileEntry],
        fresh: list[tuple[int, FileEntry, BitMap64]],
        changes: Changes,
        drop_keys: list,
    ) -> None:
        """Move the in-memory state to the commit just published."""
        self.snapshot.version += 1
        self.snapshot.transactions[self.app_id] = batch_id
        for entry in gone:
            del self.snapshot.files[entry.path]
            del self.deleted[entry.path]
            self.index.forget_file(entry.path)
        for entry, deleted in updated:
            self.snapshot.files[entry.path] = entry
            self.deleted[entry.path] = deleted
        for share, entry, deleted in fresh:
            if entry.path not in self.snapshot.files:
                continue
            keys, partitions, offsets = changes.in_file(share)
            if self.kind.position is None:  # no stored position: none is kept (as at open)
                partitions = offsets = np.zeros(0, dtype=np.int64)
            live = None
            if len(deleted):
                live = np.ones(entry.num_records, dtype=bool)
                live[dvs.to_numpy(deleted)] = False
            self.index.add_file(entry.path, keys, partitions, offsets, live)
        self.index.drop(drop_keys)
        self.recount_live_rows()


def _new_entries(shares: pa.Table) -> list[FileEntry | None]:
    entries: list[FileEntry | None] = []
    columns = ["path", "size", "modification_time", "num_records", "stats"]
    for row in shares.select(columns).to_pylist():
        if row["path"] is None:
            entries.append(None)
            continue
        entries.append(
            FileEntry(
                path=row["path"],
                size=row["size"],
                modification_time=row["modification_time"],
                num_records=row["num_records"],
                stats=row["stats"],
            )
        )
    return entries


def create_dv_table(location: TableLocation, schema: pa.Schema) -> None:
    """An empty Delta table that allows deletion vectors (reader 3 / writer 7).

    Only the protocol feature is added: setting ``delta.enableDeletionVectors`` through delta-rs
    1.6 would also list ``variantType`` as a reader feature, which many readers refuse.
    """
    DeltaTable.create(
        str(location), schema, mode="ignore", storage_options=location.delta_options()
    )


def ensure_dv_feature(location: TableLocation) -> None:
    from deltalake import TableFeatures

    table = DeltaTable(str(location), storage_options=location.delta_options())
    features = table.protocol().reader_features or []
    if "deletionVectors" not in features:
        feature = TableFeatures.DeletionVectors
        table.alter.add_feature(feature, allow_protocol_versions_increase=True)
