"""The dead-letter table: records a pipeline could not decode, kept whole with the reason.

It is an append-only Delta table per deployment. The records are written where they are found:
each Spark task writes its own as one Parquet file into the table (:class:`DeadLetterFiles`)
and hands back only the file's entry; the driver commits a batch's entries in one Delta commit
(:meth:`DeadLetters.commit`). Commits are idempotent by batch id (the same
application-transaction trick as the compacted table), so a replayed batch adds nothing twice;
files of a batch that never committed are never referenced.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from streaming.delta.data_files import file_stats
from streaming.kafka.reader import kept_record_schema

if TYPE_CHECKING:
    from deltalake import DeltaTable

# A dead letter as a writer hands it over: the source's columns plus the reason.
LETTER_SCHEMA = kept_record_schema().append(pa.field("error", pa.string()))
SCHEMA = LETTER_SCHEMA.append(pa.field("batch_id", pa.int64()))
# How the files store it: Delta's timestamps are microseconds, UTC.
FILE_SCHEMA = pa.schema(
    [
        pa.field(f.name, pa.timestamp("us", tz="UTC")) if pa.types.is_timestamp(f.type) else f
        for f in SCHEMA
    ]
)
ENTRY_SCHEMA = pa.schema(
    [
        ("path", pa.string()),
        ("size", pa.int64()),
        ("modification_time", pa.int64()),
        ("num_records", pa.int64()),
        ("stats", pa.string()),
    ]
)


@dataclass(frozen=True)
class DeadLetterFiles:
    """Writes a share of one batch's dead letters as a file of the table; small and picklable,
    so Spark ships it to the tasks."""

    path: str

    def write(self, records: pa.Table, batch_id: int) -> pa.Table:
        """Write ``records`` (the source's columns plus ``error``); returns the file's entry as
        one row of :data:`ENTRY_SCHEMA` (no row when there is nothing to write)."""
        if records.num_rows == 0:
            return ENTRY_SCHEMA.empty_table()
        ids = pa.array([batch_id] * records.num_rows, pa.int64())
        rows = records.append_column("batch_id", ids).select(SCHEMA.names).cast(FILE_SCHEMA)
        name = f"part-{batch_id:010d}-{uuid.uuid4().hex}.parquet"
        sink = pa.BufferOutputStream()
        pq.write_table(rows, sink, compression="snappy")
        data = sink.getvalue()
        Path(self.path).mkdir(parents=True, exist_ok=True)
        (Path(self.path) / name).write_bytes(data.to_pybytes())
        entry = {
            "path": name,
            "size": data.size,
            "modification_time": int(time.time() * 1000),
            "num_records": rows.num_rows,
            "stats": file_stats(rows),
        }
        return pa.Table.from_pylist([entry], schema=ENTRY_SCHEMA)


class DeadLetters:
    """One deployment's dead letters. Opened on first use and kept up to date after that."""

    def __init__(self, path: Path, app_id: str) -> None:
        self.path = path
        self.app_id = app_id
        self._table: DeltaTable | None = None

    def _current(self) -> DeltaTable | None:
        """The table at its latest version, or None while no record was ever dead-lettered."""
        # deltalake loads here, on the driver: executors only write files (DeadLetterFiles).
        from deltalake import DeltaTable

        if self._table is not None:
            self._table.update_incremental()
        elif DeltaTable.is_deltatable(str(self.path)):
            self._table = DeltaTable(str(self.path))
        return self._table

    @property
    def files(self) -> DeadLetterFiles:
        return DeadLetterFiles(str(self.path))

    def append(self, records: pa.Table, batch_id: int) -> int:
        """Append one batch's dead letters from here; returns how many were written (0 on a
        replay)."""
        if records.num_rows == 0 or self._done(batch_id):
            return 0
        return self.commit(self.files.write(records, batch_id), batch_id)

    def commit(self, entries: pa.Table, batch_id: int) -> int:
        """Commit one batch's written files (:meth:`DeadLetterFiles.write` entries) in one
        Delta commit; returns how many records they hold (0 for none, or on a replay)."""
        entries = entries.filter(entries["num_records"].is_valid()) if entries.num_rows else entries
        if entries.num_rows == 0 or self._done(batch_id):
            return 0
        from deltalake import CommitProperties, DeltaTable, Transaction
        from deltalake.transaction import AddAction

        dt = self._current()
        if dt is None:
            self.path.mkdir(parents=True, exist_ok=True)
            DeltaTable.create(str(self.path), FILE_SCHEMA, mode="ignore")
            dt = self._current()
            assert dt is not None
        actions = [
            AddAction(e["path"], e["size"], {}, e["modification_time"], True, e["stats"])
            for e in entries.to_pylist()
        ]
        props = CommitProperties(app_transactions=[Transaction(self.app_id, batch_id)])
        dt.create_write_transaction(actions, "append", FILE_SCHEMA, commit_properties=props)
        return sum(entries["num_records"].to_pylist())

    def _done(self, batch_id: int) -> bool:
        dt = self._current()
        done = None if dt is None else dt.transaction_version(self.app_id)
        return done is not None and done >= batch_id

    def count(self) -> int:
        dt = self._current()
        return 0 if dt is None else dt.count()

    def read(self) -> pa.Table:
        dt = self._current()
        return SCHEMA.empty_table() if dt is None else dt.to_pyarrow_table()
