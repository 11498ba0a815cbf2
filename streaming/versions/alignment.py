"""A version that is not live cuts its micro-batches where the live version cut its commits.

Comparing two versions needs both tables at exactly the same input offsets. Two queries reading
the same topics cut their batches differently, so the non-live version follows the live one: its
source never reads past the offsets of the live version's latest commit (the ``endingOffsetsFile``
option, re-read every trigger). Each of its commits then lands on a live commit's offsets, and it
never overtakes the live version. When the live pointer moves to this version, the cap is lifted;
a version that stops being live starts following the new live one.

The same numbers give the candidate's progress: how much of the backlog between the log's start and
the live position it has processed, and when it will catch up at its current rate.
"""

from __future__ import annotations

from dataclasses import dataclass

from deltalake import DeltaTable

from streaming.atomic_file import write_atomically
from streaming.delta.table_reader import latest_commit_of
from streaming.deployment import Deployment
from streaming.kafka import offsets as off
from streaming.versions.live_pointer import live_version


@dataclass(frozen=True)
class CatchUp:
    """Where a non-live version stands against the live one."""

    live_version: str
    live_offsets: off.OffsetMap | None  # the live version's latest commit; None before its first
    behind: int  # records between this version's position and the live position
    done_pct: float  # percent of the backlog (log start -> live position) processed

    def eta_s(self, rate_per_s: float) -> float | None:
        return self.behind / rate_per_s if rate_per_s > 0 else None


def progress(
    position: off.OffsetMap, target: off.OffsetMap, start: off.OffsetMap | None = None
) -> tuple[int, float]:
    """Records still between ``position`` and ``target``, and the percent of the way from
    ``start`` (default: offset 0 everywhere) to ``target`` already done."""
    behind = off.total_lag(position, target)
    backlog = off.total_lag(start or {}, target)
    return behind, 100.0 if backlog == 0 else max(0.0, 100.0 * (backlog - behind) / backlog)


class LiveAlignment:
    """Keeps a deployment's ``endingOffsetsFile`` at the live version's latest commit.

    :meth:`refresh` runs several times a second next to the query, so the live table is opened
    once and then only brought up to date (new log entries), and its history is read again only
    when it has a new version.
    """

    def __init__(self, deployment: Deployment) -> None:
        self.deployment = deployment
        self.path = deployment.alignment_path
        self.live: str | None = None
        self.live_offsets: off.OffsetMap | None = None
        self._table: DeltaTable | None = None
        self._table_version = -1

    @property
    def following(self) -> bool:
        return self.live is not None and self.live != self.deployment.version

    def refresh(self) -> None:
        """Re-read the live pointer and the live table; rewrite or remove the cap file."""
        live = live_version(self.deployment.home, self.deployment.pipeline)
        if live != self.live:
            self.live, self._table, self._table_version = live, None, -1
            self.live_offsets = None
        if not self.following:
            self.path.unlink(missing_ok=True)
            return
        if self._changed() or not self.path.exists():
            if self._table is not None:
                commit = latest_commit_of(self._table)
                self.live_offsets = commit.end_offsets if commit else None
            self._write(self.live_offsets or {})  # no live commit yet: wait for the first one

    def _changed(self) -> bool:
        """Bring the live table up to date; True when it has a version not read yet."""
        if self._table is None:
            path = Deployment(self.deployment.pipeline, str(self.live), self.deployment.home)
            if not DeltaTable.is_deltatable(str(path.table_path)):
                return False
            self._table = DeltaTable(str(path.table_path))
        else:
            self._table.update_incremental()
        version = self._table.version()
        changed, self._table_version = version != self._table_version, version
        return changed

    def catch_up(self, committed: off.OffsetMap, earliest: off.OffsetMap) -> CatchUp | None:
        if not self.following:
            return None
        behind, done = progress(committed, self.live_offsets or {}, earliest)
        return CatchUp(str(self.live), self.live_offsets, behind, round(done, 2))

    def _write(self, offsets: off.OffsetMap) -> None:
        write_atomically(self.path, off.dumps(offsets))  # the source never reads half a file
