"""The compacted table: a Delta table holding one row per key, written by delta-rs.

Every micro-batch becomes exactly one Delta commit tagged with the application transaction
``(app_id, batch_id)``. A batch whose id is not above the table's recorded transaction version was
already committed (Spark re-runs the last batch after a crash) and is skipped, so a crash at any
point neither loses nor duplicates a row. Each commit also records the source offsets it covers.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

from streaming.define.table_kinds import TableKind
from streaming.delta.commit_info import commit_info


@dataclass(frozen=True)
class CommitResult:
    batch_id: int
    skipped: bool
    table_version: int
    source_rows: int


class CompactedTable:
    """One deployment's table. Opened lazily; created empty on first use."""

    def __init__(self, path: Path, schema: pa.Schema, kind: TableKind, app_id: str) -> None:
        self.path = path
        self.schema = schema
        self.kind = kind
        self.app_id = app_id
        self._table: DeltaTable | None = None

    def table(self) -> DeltaTable:
        if self._table is None:
            if DeltaTable.is_deltatable(str(self.path)):
                self._table = DeltaTable(str(self.path))
            else:
                self.path.mkdir(parents=True, exist_ok=True)
                self._table = DeltaTable.create(
                    str(self.path),
                    self.schema,
                    mode="ignore",
                    configuration={"delta.appendOnly": "false"},
                )
        else:
            self._table.update_incremental()
        return self._table

    def committed_batch(self) -> int | None:
        """The id of the last batch committed to this table, or None."""
        return self.table().transaction_version(self.app_id)

    def apply(
        self,
        changes: pa.Table,
        batch_id: int,
        end_offsets: dict[str, Any],
        deployment: str,
        fingerprint: str = "",
    ) -> CommitResult:
        """Merge one batch of changes; a no-op if this batch was committed before."""
        dt = self.table()
        done = dt.transaction_version(self.app_id)
        if done is not None and done >= batch_id:
            return CommitResult(batch_id, True, dt.version(), changes.num_rows)
        props = CommitProperties(
            custom_metadata=commit_info(batch_id, end_offsets, deployment, fingerprint),
            app_transactions=[Transaction(self.app_id, batch_id)],
        )
        if changes.num_rows and not dt.file_uris():
            # An empty table (the first batch of a rebuild): a merge would only insert, so
            # append the inserted rows and skip the join.
            self._append(dt, changes, props)
        elif changes.num_rows:
            self._merge(dt, changes, props)
            dt.update_incremental()
        if dt.transaction_version(self.app_id) != batch_id:
            # Nothing to merge (or a merge that changed no row): record the batch anyway, so the
            # table's history covers every offset range and the batch is never applied again.
            write_deltalake(dt, self.schema.empty_table(), mode="append", commit_properties=props)
            dt.update_incremental()
        return CommitResult(batch_id, False, dt.version(), changes.num_rows)

    def _append(self, dt: DeltaTable, changes: pa.Table, props: CommitProperties) -> None:
        rows = self.kind.rows_to_append(changes)
        if rows.num_rows:
            rows = rows.select(self.schema.names).cast(self.schema)
            write_deltalake(dt, rows, mode="append", commit_properties=props)
            dt.update_incremental()

    def _merge(self, dt: DeltaTable, changes: pa.Table, props: CommitProperties) -> None:
        predicate = " AND ".join(f"t.`{k}` = s.`{k}`" for k in self.kind.keys)
        columns = {c: f"s.`{c}`" for c in self.schema.names}
        merger = dt.merge(
            changes,
            predicate=predicate,
            source_alias="s",
            target_alias="t",
            commit_properties=props,
        )
        self.kind.merge(merger, columns).execute()
