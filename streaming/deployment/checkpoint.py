"""The one reader of a deployment's Spark checkpoint.

Spark writes ``offsets/<batch>`` before it runs a micro-batch (the source offsets the batch ends
at) and ``commits/<batch>`` once the batch's sink returned. An offsets file holds a version line,
a metadata line, then one JSON object per source; this platform's sources give
``{topic: {partition: offset}}``. Nothing else in the platform opens these files.

Beside Spark's files the platform keeps ``kappa-start.json``: the offsets a fresh query starts
from, resolved once (``earliest`` and ``latest`` move), so the first batch's start is the same
however often the query restarts before it commits.

A forward-only version's checkpoint continues another's (:meth:`SparkCheckpoint.continue_from`):
it holds that query's offsets of one batch (and of the batch before, which Spark reads to
resume) and a commit of it, so Spark resumes with the next batch id from that batch's end
offsets, and the batch ids of the table and the state stores it copied go on in order.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streaming.atomic_file import write_atomically
from streaming.kafka import offsets as off

START_FILE = "kappa-start.json"
# What Spark's commit log holds for a batch of a query without watermarks.
_COMMIT = 'v1\n{"nextBatchWatermarkMs":0}'


@dataclass(frozen=True)
class SparkCheckpoint:
    """A Structured Streaming checkpoint folder."""

    path: Path

    @property
    def started(self) -> bool:
        """Whether a query has planned a batch here (a fresh checkpoint starts from the
        starting offsets, an existing one resumes)."""
        return (self.path / "offsets").exists()

    def planned_batches(self) -> list[int]:
        """The ids of the batches planned, in order (each has its end offsets)."""
        return _batch_ids(self.path / "offsets")

    def committed_batches(self) -> list[int]:
        """The ids of the batches whose sink returned, in order."""
        return _batch_ids(self.path / "commits")

    def batch_end_offsets(self, batch_id: int) -> dict[str, Any]:
        """The source end offsets of ``batch_id`` as Spark records them (partitions as strings),
        all sources merged."""
        lines = (self.path / "offsets" / str(batch_id)).read_text().splitlines()
        merged: dict[str, Any] = {}
        for line in lines[2:]:
            if line.strip():
                merged.update(json.loads(line))
        return merged

    def batch_start_offsets(self, batch_id: int) -> off.OffsetMap:
        """Where ``batch_id`` starts: the end of the batch before it, or the query's start."""
        if batch_id > 0 and (self.path / "offsets" / str(batch_id - 1)).exists():
            return off.from_spark(self.batch_end_offsets(batch_id - 1))
        start = self.start_offsets()
        if start is None:
            msg = f"{self.path}: no start offsets for batch {batch_id}"
            raise FileNotFoundError(msg)
        return start

    def start_offsets(self) -> off.OffsetMap | None:
        """The offsets the query started from (None before a fresh start recorded them)."""
        try:
            return off.loads((self.path / START_FILE).read_text())
        except FileNotFoundError:
            return None

    def record_start(self, offsets: off.OffsetMap) -> None:
        """Record where a fresh query starts (before Spark plans its first batch)."""
        write_atomically(self.path / START_FILE, off.dumps(offsets))

    def continue_from(self, source: SparkCheckpoint, batch_id: int) -> None:
        """Make this (empty) checkpoint resume after ``source``'s batch ``batch_id``: a query id
        of its own, the batch's offsets, those of the batch before and a commit of it, copied;
        its end offsets are recorded as this query's start.

        Raises:
            FileNotFoundError: ``source`` no longer holds the batch's offsets.
        """
        # A query of its own (Spark refuses offsets without the query's metadata, and two
        # queries of one id cannot run side by side).
        write_atomically(self.path / "metadata", json.dumps({"id": str(uuid.uuid4())}))
        batches = [batch_id - 1, batch_id] if batch_id > 0 else [batch_id]
        for batch in batches:
            text = (source.path / "offsets" / str(batch)).read_text()
            write_atomically(self.path / "offsets" / str(batch), text)
        try:
            commit = (source.path / "commits" / str(batch_id)).read_text()
        except FileNotFoundError:  # the source died between its table's commit and Spark's
            commit = _COMMIT
        write_atomically(self.path / "commits" / str(batch_id), commit)
        self.record_start(off.from_spark(source.batch_end_offsets(batch_id)))

    def planned_at(self, batch_id: int) -> float:
        """When Spark planned ``batch_id`` (wrote its offsets), as a Unix time."""
        return (self.path / "offsets" / str(batch_id)).stat().st_mtime

    def planned_position(self) -> off.OffsetMap | None:
        """The end offsets of the latest planned batch (None before the first)."""
        batches = self.planned_batches()
        if not batches:
            return None
        return off.from_spark(self.batch_end_offsets(batches[-1]))


def _batch_ids(folder: Path) -> list[int]:
    if not folder.is_dir():
        return []
    return sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit())
