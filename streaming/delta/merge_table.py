"""A compacted table written by delta-rs merges, for kinds whose new row depends on the stored
one (``WriteStrategy.MERGE``, e.g. ``Accumulate``).

Every micro-batch becomes exactly one Delta commit tagged with the application transaction
``(app_id, batch_id)``. A batch whose id is not above the table's recorded transaction version was
already committed (Spark re-runs the last batch after a crash) and is skipped, so a crash at any
point neither loses nor duplicates a row. A merge rewrites every file the batch touches, so its
cost grows with the table.
"""

from __future__ import annotations

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

from streaming.define.table_kinds import TableKind
from streaming.delta.table_store import TableLocation


class MergeTable:
    """One deployment's merged table. Opened lazily; created empty on first use."""

    def __init__(
        self, location: TableLocation, schema: pa.Schema, kind: TableKind, app_id: str
    ) -> None:
        self.location = location
        self.schema = schema
        self.kind = kind
        self.app_id = app_id
        self._table: DeltaTable | None = None

    def table(self) -> DeltaTable:
        uri, options = str(self.location), self.location.delta_options()
        if self._table is None:
            if DeltaTable.is_deltatable(uri, storage_options=options):
                self._table = DeltaTable(uri, storage_options=options)
            else:
                if self.location.is_local:
                    self.location.local_path.mkdir(parents=True, exist_ok=True)
                self._table = DeltaTable.create(
                    uri,
                    self.schema,
                    mode="ignore",
                    configuration={"delta.appendOnly": "false"},
                    storage_options=options,
                )
        else:
            self._table.update_incremental()
        return self._table

    def committed_batch(self) -> int | None:
        """The id of the last batch committed to this table, or None."""
        return self.table().transaction_version(self.app_id)

    def apply(self, changes: pa.Table, batch_id: int, info: dict[str, str]) -> tuple[bool, int]:
        """Merge one batch of changes; a no-op if this batch was committed before.

        Returns (skipped, the table's version after the batch).
        """
        dt = self.table()
        done = dt.transaction_version(self.app_id)
        if done is not None and done >= batch_id:
            return True, dt.version()
        props = CommitProperties(
            custom_metadata=info, app_transactions=[Transaction(self.app_id, batch_id)]
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
        return False, dt.version()

    def _append(self, dt: DeltaTable, changes: pa.Table, props: CommitProperties) -> None:
        rows = self.kind.rows_to_append(changes)
        if rows.num_rows:
            rows = rows.select(self.schema.names).cast(self.schema)
            write_deltalake(dt, rows, mode="append", commit_properties=props)
            dt.update_incremental()

    def _merge(self, dt: DeltaTable, changes: pa.Table, props: CommitProperties) -> None:
        # Every key column: a windowed table's key is (key, window_start).
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
