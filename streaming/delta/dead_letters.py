"""The dead-letter table: records a pipeline could not decode, kept whole with the reason.

It is an append-only Delta table per deployment. Appends are idempotent by batch id (the same
application-transaction trick as the compacted table), so a replayed batch adds nothing twice.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

from streaming.kafka.reader import kept_record_schema

SCHEMA = pa.schema([*kept_record_schema(), ("error", pa.string()), ("batch_id", pa.int64())])


class DeadLetters:
    """One deployment's dead letters. Opened on first use and kept up to date after that."""

    def __init__(self, path: Path, app_id: str) -> None:
        self.path = path
        self.app_id = app_id
        self._table: DeltaTable | None = None

    def _current(self) -> DeltaTable | None:
        """The table at its latest version, or None while no record was ever dead-lettered."""
        if self._table is not None:
            self._table.update_incremental()
        elif DeltaTable.is_deltatable(str(self.path)):
            self._table = DeltaTable(str(self.path))
        return self._table

    def append(self, records: pa.Table, batch_id: int) -> int:
        """Append one batch's dead letters; returns how many were written (0 on a replay)."""
        if records.num_rows == 0:
            return 0
        dt = self._current()
        if dt is not None:
            done = dt.transaction_version(self.app_id)
            if done is not None and done >= batch_id:
                return 0
        ids = pa.array([batch_id] * records.num_rows, pa.int64())
        table = records.append_column("batch_id", ids).select(SCHEMA.names).cast(SCHEMA)
        self.path.mkdir(parents=True, exist_ok=True)
        write_deltalake(
            dt if dt is not None else str(self.path),
            table,
            mode="append",
            commit_properties=CommitProperties(
                app_transactions=[Transaction(self.app_id, batch_id)]
            ),
        )
        return records.num_rows

    def count(self) -> int:
        dt = self._current()
        return 0 if dt is None else dt.count()

    def read(self) -> pa.Table:
        dt = self._current()
        return SCHEMA.empty_table() if dt is None else dt.to_pyarrow_table()
