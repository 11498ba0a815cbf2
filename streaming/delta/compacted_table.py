"""The compacted table: a Delta table holding one row per key, the sink of every deployment.

Every micro-batch becomes exactly one Delta commit tagged with the application transaction
``(app_id, batch_id)``. A batch whose id is not above the table's recorded transaction version was
already committed (Spark re-runs the last batch after a crash) and is skipped, so a crash at any
point neither loses nor duplicates a row. Each commit also records the source offsets it covers
(``streaming.delta.commit_info``).

How a batch is written is the table kind's choice (``WriteStrategy``): upsert/delete kinds
(every built-in kind: ``LatestPerKey``, ``ChangeRows`` with one or more key columns,
``Accumulate`` with evaluable updates) go to a :class:`~streaming.delta.dv_table.DvTable` (new
files plus deletion vectors, the files written where the changes are), kinds that only give
merge clauses to a :class:`~streaming.delta.merge_table.MergeTable` (a delta-rs merge on the
driver).

The entry point is narrow so any engine can call it: :meth:`CompactedTable.apply` takes one
batch's changes as an Arrow table, the batch id and what the commit records. For upsert/delete
kinds the changes are full rows (the table's columns) plus ``_delete``, and either

- ``_partition`` and ``_offset``, each change's source position: the batch is reduced to the
  latest change per key, and a kind with ``position`` keeps a stored row a change from an older
  position would replace; or
- no position columns (the output of a stateful operator): at most one change per key per
  batch, each replacing or deleting its key's row; a duplicate key is refused with an error.

For ``Accumulate`` the changes are the table's columns, one row per key, each folded into its
key's stored row.

:meth:`CompactedTable.commit_shares` is the same commit for changes whose data files were
written elsewhere (``ShareWriter.write`` on the executors).

After each commit the table's upkeep runs: the deletion-vector table's background maintenance
(``streaming.delta.maintenance``), then the ``upkeep`` steps its owner gives, with the batch id
just committed (the deployment's state store collects its garbage so). A failed step is logged
and tried again after the next commit; the commit stands.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from streaming.define.table_kinds import TableKind, WriteStrategy
from streaming.delta.commit_info import commit_info
from streaming.delta.data_files import ShareWriter
from streaming.delta.dv_table import DvTable
from streaming.delta.maintenance import Maintenance, MaintenancePolicy
from streaming.delta.merge_table import MergeTable
from streaming.delta.table_store import TableLocation

log = logging.getLogger(__name__)

# A step of the table's upkeep: given the batch just committed; cheap (between two batches).
UpkeepStep = Callable[[int], object]


@dataclass(frozen=True)
class CommitResult:
    batch_id: int
    skipped: bool
    table_version: int
    source_rows: int


class CompactedTable:
    """One deployment's table. Opened lazily; created empty on first use."""

    def __init__(
        self,
        where: TableLocation | Path | str,
        schema: pa.Schema,
        kind: TableKind,
        app_id: str,
        policy: MaintenancePolicy | None = None,
        upkeep: Sequence[UpkeepStep] = (),
    ) -> None:
        self.location = TableLocation.of(where)
        self.upkeep = tuple(upkeep)
        self.schema = schema
        self.kind = kind
        self.app_id = app_id
        self._dv: DvTable | None = None
        self._merge: MergeTable | None = None
        self.maintenance: Maintenance | None = None
        if kind.write_strategy is WriteStrategy.UPSERT_DELETE:
            self._dv = DvTable(self.location, schema, kind, app_id)
            self.maintenance = Maintenance(self._dv, policy or MaintenancePolicy())
        else:
            self._merge = MergeTable(self.location, schema, kind, app_id)

    @property
    def writes_shares(self) -> bool:
        """Whether batches are written as shares (data files written where the changes are)."""
        return self._dv is not None

    def share_writer(self) -> ShareWriter:
        assert self._dv is not None
        return self._dv.writer

    def committed_batch(self) -> int | None:
        """The id of the last batch committed to this table, or None."""
        if self._dv is not None:
            return self._dv.committed_batch()
        assert self._merge is not None
        return self._merge.table().transaction_version(self.app_id)

    def version(self) -> int:
        if self._dv is not None:
            return self._dv.version
        assert self._merge is not None
        return self._merge.table().version()

    def row_count(self) -> int:
        """The live rows of the table's newest version (deletion vectors applied)."""
        if self._dv is not None:
            return self._dv.row_count()
        assert self._merge is not None
        return self._merge.table().count()

    @contextmanager
    def batch(self) -> Iterator[CompactedTable]:
        """Hold the table from writing a batch's files to committing them (upsert/delete)."""
        with self._dv.batch() if self._dv is not None else nullcontext():
            yield self

    def apply(
        self,
        changes: pa.Table,
        batch_id: int,
        end_offsets: dict[str, Any],
        deployment: str,
        fingerprint: str = "",
    ) -> CommitResult:
        """Write and commit one batch of changes; a no-op if this batch was committed before."""
        if self._dv is not None:
            # Held until the commit, so upkeep never sees the batch's files unreferenced.
            with self._dv.batch():
                done = self._dv.committed_batch()
                if done is not None and done >= batch_id:
                    return CommitResult(batch_id, True, self._dv.version, changes.num_rows)
                shares = self._dv.writer.write(changes, batch_id, self._dv.version)
                return self.commit_shares(shares, batch_id, end_offsets, deployment, fingerprint)
        assert self._merge is not None
        info = commit_info(batch_id, end_offsets, deployment, fingerprint)
        skipped, version = self._merge.apply(self.kind.reduce(changes), batch_id, info)
        if not skipped:
            self._after_commit(batch_id)
        return CommitResult(batch_id, skipped, version, changes.num_rows)

    def commit_shares(
        self,
        shares: pa.Table,
        batch_id: int,
        end_offsets: dict[str, Any],
        deployment: str,
        fingerprint: str = "",
        state_versions: Mapping[int, int] | None = None,
    ) -> CommitResult:
        """Commit a batch whose shares were written (``ShareWriter``), e.g. by Spark tasks;
        ``state_versions`` is a stateful plan's state version the commit records."""
        assert self._dv is not None and self.maintenance is not None
        info = commit_info(batch_id, end_offsets, deployment, fingerprint, state_versions)
        self.maintenance.before_commit()
        done = self._dv.commit(shares, batch_id, info)
        if not done.skipped:
            self.maintenance.after_commit()
            self._after_commit(batch_id)
        rows = pc.sum(pc.list_value_length(shares["keys"])).as_py() or 0
        return CommitResult(batch_id, done.skipped, done.table_version, rows)

    def _after_commit(self, batch_id: int) -> None:
        for step in self.upkeep:
            try:
                step(batch_id)
            except Exception as exc:
                log.warning(
                    "table %s: upkeep after batch %s failed: %s", self.location, batch_id, exc
                )

    def close(self) -> None:
        """Stop background maintenance (waits for the step in flight)."""
        if self.maintenance is not None:
            self.maintenance.close()
