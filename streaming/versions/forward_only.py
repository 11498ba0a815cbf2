"""Forward-only versions: a new version that starts from the live version's table and state
instead of replaying the log.

Allowed when the new version changes only what runs after the stateful operator
(``streaming.versions.change``). It starts at a cut, the live version's latest commit ``C``: the
live table's files and log up to ``C`` and each state partition's store at the version ``C``
records are copied into the new version's own paths (a real copy: retiring the live version
later breaks nothing), its Spark checkpoint continues from ``C``'s batch and end offsets, and
from there it runs its own code (``streaming.run.forward_start`` does the copy). So rows the log
changed before the cut keep the old code's values; rows changed after it are the new code's.

This module owns the record of such a start, ``forward_only/<id>.json`` (listed in
``streaming.deployment.record``, so retiring and ``kappa reset`` delete it): the version and
cut it started from. The record is written before the copy begins and completed after it; a
record that is not complete is a copy that died half-way, redone at the next start. The
versions overview, ``kappa versions`` and the comparison before promotion read it here.
"""

from __future__ import annotations

import time

from pydantic import BaseModel, ConfigDict, Field

from streaming.atomic_file import write_atomically
from streaming.deployment import Deployment
from streaming.kafka import offsets as off


class Cut(BaseModel):
    """Where a forward-only version started: a commit of the version it was copied from."""

    model_config = ConfigDict(frozen=True)

    version: str  # the live version then
    batch_id: int
    table_version: int  # of the live version's table
    offsets: dict[str, dict[str, int]]  # its end offsets, as Spark writes them
    state_versions: dict[int, int] = Field(default_factory=dict)

    @property
    def end_offsets(self) -> off.OffsetMap:
        return off.from_spark(self.offsets)

    def describe(self) -> str:
        return (
            f"{self.version} batch {self.batch_id} (table version {self.table_version}, "
            f"{off.total_lag({}, self.end_offsets):,} records)"
        )


class ForwardOnlyStart(BaseModel):
    """A forward-only version's start (see the module docstring)."""

    model_config = ConfigDict(frozen=True)

    cut: Cut
    started_at: float
    completed_at: float | None = None
    # The version of its own table whose commit starts it (the copy's last entry).
    table_version: int | None = None

    @property
    def complete(self) -> bool:
        return self.completed_at is not None

    def describe(self) -> str:
        """``forward-only from v1 batch 12 (table version 13, 4,200 records)``."""
        return f"forward-only from {self.cut.describe()}"


def read_start(deployment: Deployment) -> ForwardOnlyStart | None:
    """The deployment's forward-only start, complete or not (None: it replayed the log)."""
    try:
        text = deployment.forward_only_path.read_text()
    except FileNotFoundError:
        return None
    return ForwardOnlyStart.model_validate_json(text)


def completed_start(deployment: Deployment) -> ForwardOnlyStart | None:
    """The deployment's forward-only start once its copy is complete."""
    start = read_start(deployment)
    return start if start is not None and start.complete else None


def write_start(deployment: Deployment, start: ForwardOnlyStart) -> None:
    write_atomically(deployment.forward_only_path, start.model_dump_json(indent=1))


def begun(cut: Cut) -> ForwardOnlyStart:
    return ForwardOnlyStart(cut=cut, started_at=time.time())


def completed(start: ForwardOnlyStart, table_version: int) -> ForwardOnlyStart:
    return start.model_copy(update={"completed_at": time.time(), "table_version": table_version})
