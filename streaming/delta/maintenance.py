"""Background upkeep of a deletion-vector table while its query runs.

One worker thread per table does the slow parts: preparing compactions, writing Delta
checkpoints (no delta-rs post-commit hook runs for the sink's own commits, and without them
every reader replays the whole log) and removing unreferenced files. The sink's thread only
publishes a prepared compaction between two batches. A failed step is logged and tried again
later; the query never waits for one, except for the short deletion step of a cleanup, which
holds the table between batches.
"""

from __future__ import annotations

import logging
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from streaming.delta import file_compaction
from streaming.delta.cleanup import remove_unreferenced
from streaming.delta.dv_table import DvTable

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MaintenancePolicy:
    """How often each step runs, counted in batch commits, and the retention window."""

    compaction: file_compaction.CompactionPolicy = field(
        default_factory=file_compaction.CompactionPolicy
    )
    compact_every: int = 10  # look for files to compact every this many commits
    checkpoint_every: int = 100
    cleanup_every: int = 200
    retention_s: float = 3600.0  # files a version of the last hour references are kept
    background: bool = True  # False runs every step in the caller's thread (tests, tools)


@dataclass
class MaintenanceStats:
    compactions: int = 0
    checkpoints: int = 0
    removed_files: int = 0
    failures: int = 0
    last_error: str = ""


class Maintenance:
    """Compaction, checkpoints and cleanup of one table, driven by its commits."""

    def __init__(self, table: DvTable, policy: MaintenancePolicy) -> None:
        self.table = table
        self.policy = policy
        self.stats = MaintenanceStats()
        self._commits = 0
        self._worker: ThreadPoolExecutor | None = None
        self._compaction: Future[file_compaction.Prepared | None] | None = None
        self._pending: file_compaction.Prepared | None = None  # prepared, not yet published

    def before_commit(self) -> None:
        """Publish a compaction whose files are ready (the sink's thread, between batches)."""
        future = self._compaction
        if future is None or not future.done():
            return
        self._compaction = None
        job = self._result(future)
        if job is None:
            return
        published = self.table.snapshot.version
        try:
            file_compaction.finish(self.table, job)
            self.stats.compactions += 1
        except Exception as exc:  # the rewritten file stays unreferenced; cleanup removes it
            self._failed("publishing a compaction", exc)
            if self.table.snapshot.version != published:
                # Published but not followed in memory: take the table as its log says.
                self.table.open()
        finally:
            self._pending = None

    def after_commit(self) -> None:
        """Schedule what is due after one more batch commit."""
        self._commits += 1
        due = self._commits
        if due % self.policy.compact_every == 0 and self._compaction is None:
            sources = file_compaction.choose(self.table, self.policy.compaction)
            if sources:
                self._compaction = self._submit(self._prepare, sources)
        if due % self.policy.checkpoint_every == 0:
            self._submit(self._checkpoint)
        if due % self.policy.cleanup_every == 0:
            self._submit(self._cleanup)
        if not self.policy.background:
            self.before_commit()

    def compact_now(self) -> None:
        """Choose, prepare and publish a compaction in this thread (tools and tests)."""
        sources = file_compaction.choose(self.table, self.policy.compaction)
        if sources:
            file_compaction.finish(self.table, file_compaction.prepare(self.table, sources))
            self.stats.compactions += 1

    def checkpoint_now(self) -> None:
        """Write a Delta checkpoint in this thread (tools and tests)."""
        self._checkpoint()

    def cleanup_now(self, now: float | None = None) -> list[str]:
        return remove_unreferenced(self.table, self.policy.retention_s, self._keep, now)

    def drain(self, timeout_s: float) -> None:
        """Wait for the work scheduled so far (one worker runs it in order); a prepared
        compaction is then published by the next commit."""
        if self._worker is not None:
            self._worker.submit(lambda: None).result(timeout=timeout_s)

    def close(self) -> None:
        if self._worker is not None:
            self._worker.shutdown(wait=True, cancel_futures=True)
            self._worker = None

    # -- the worker's steps -------------------------------------------------------------------

    def _submit(self, step, *args) -> Future:  # type: ignore[no-untyped-def]
        if not self.policy.background:
            done: Future = Future()
            done.set_result(step(*args))
            return done
        if self._worker is None:
            self._worker = ThreadPoolExecutor(1, thread_name_prefix="kappa-maintenance")
        return self._worker.submit(step, *args)

    def _prepare(self, sources: list[file_compaction.Source]) -> file_compaction.Prepared | None:
        try:
            self._pending = file_compaction.prepare(self.table, sources)
        except Exception as exc:
            self._failed("preparing a compaction", exc)
            return None
        return self._pending

    def _checkpoint(self) -> None:
        from deltalake import DeltaTable

        location = self.table.location
        try:
            DeltaTable(str(location), storage_options=location.delta_options()).create_checkpoint()
            self.stats.checkpoints += 1
        except Exception as exc:
            self._failed("writing a checkpoint", exc)

    def _cleanup(self) -> None:
        try:
            self.stats.removed_files += len(self.cleanup_now())
        except Exception as exc:
            self._failed("removing unreferenced files", exc)

    def _keep(self) -> list[str]:
        pending = self._pending
        return [pending.entry.path] if pending is not None else []

    def _result(self, future: Future) -> file_compaction.Prepared | None:
        try:
            return future.result()
        except Exception as exc:
            self._failed("preparing a compaction", exc)
            return None

    def _failed(self, what: str, exc: Exception) -> None:
        self.stats.failures += 1
        self.stats.last_error = f"{what}: {exc}"
        log.warning("table %s: %s failed (tried again later): %s", self.table.location, what, exc)
