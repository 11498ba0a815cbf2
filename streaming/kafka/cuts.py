"""Shared cut points of the log, so that tables of different pipelines commit at equal offsets.

Every pipeline cuts its micro-batches where its own source happens to stop, so two tables that
read the same topic almost never have a commit at the same offsets, and a read across both at
one position of the log would be impossible. A *cut* is a position every deployment can stop at:
the last stable offsets of the topics at one moment. Cuts live in a small log under the platform
home (``Home.cuts``, one JSON line per cut), which every deployment's source reads:

- a source whose newest cut is older than the cut interval (or covers none of its topics) takes
  a new cut: the current last stable offsets of every topic any cut named so far and its own,
  listed under a lock and appended as one line;
- every batch ends at the newest cut inside the range it would otherwise read (within its read
  limit), so a caught-up deployment commits at every cut it sees and a replay with big batches
  stays in big batches; with no cut in range the batch ends as it would have.

A cut changes only where commits land, never what a table holds at a commit: every table is an
exact function of the offsets its commit records. A consistent read (``streaming.query``) then
picks the newest cut at which every table it reads has a commit. Old cuts are pruned after a
retention period.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from streaming.atomic_file import write_atomically
from streaming.kafka import offsets as off

DEFAULT_INTERVAL_MS = 500
DEFAULT_RETENTION_MS = 600_000
# The log is rewritten without the cuts older than the retention once they number this many.
PRUNE_AFTER = 200


@dataclass(frozen=True)
class Cut:
    """One cut: its number (increasing), when it was taken and the offsets of every topic."""

    id: int
    at_ms: int
    offsets: off.OffsetMap

    def on(self, partitions: Mapping[str, Iterable[int]]) -> off.OffsetMap | None:
        """This cut's offsets of ``partitions`` (topic -> partitions); None unless it names
        every one of them."""
        picked: off.OffsetMap = {}
        for topic, parts in partitions.items():
            mine = self.offsets.get(topic, {})
            picked[topic] = {}
            for partition in parts:
                if partition not in mine:
                    return None
                picked[topic][partition] = mine[partition]
        return picked

    def to_json(self) -> str:
        data = {"cut": self.id, "at_ms": self.at_ms, "offsets": off.to_spark(self.offsets)}
        return json.dumps(data, separators=(",", ":"))

    @classmethod
    def from_json(cls, line: str) -> Cut:
        data = json.loads(line)
        return cls(int(data["cut"]), int(data["at_ms"]), off.from_spark(data["offsets"]))


def batch_end(
    position: off.OffsetMap,
    latest: off.OffsetMap,
    max_rows: int | None,
    cuts: Iterable[Cut],
    at_log_end: bool = True,
) -> off.OffsetMap | None:
    """Where a batch from ``position`` that could read up to ``latest`` ends on a cut: the
    newest cut between the two (on every partition of ``latest``) that is at most ``max_rows``
    records past ``position``. When no cut in that range is past the position: the position
    itself if ``latest`` is the log's end (the next records wait for the next cut, which will
    fall in the range), else None. None too when the cuts past it are all beyond the limit, or
    none lies in the range: the batch then ends as it would without cuts."""
    within: list[tuple[int, off.OffsetMap]] = []
    at_position = beyond_limit = False
    for cut in cuts:
        end = cut.on(latest)
        if end is None or not _between(position, end, latest):
            continue
        records = off.total_lag(position, end)
        if records == 0:
            at_position = True
        elif max_rows is None or records <= max_rows:
            within.append((cut.id, end))
        else:
            beyond_limit = True
    if within:
        return max(within, key=lambda found: found[0])[1]
    return position if at_position and at_log_end and not beyond_limit else None


def _between(low: off.OffsetMap, middle: off.OffsetMap, high: off.OffsetMap) -> bool:
    for topic, parts in middle.items():
        for partition, offset in parts.items():
            below = low.get(topic, {}).get(partition, 0)
            if not below <= offset <= high[topic][partition]:
                return False
    return True


class CutLog:
    """The cut log at ``path``: read (cached by the file's identity and size, so a trigger
    costs a ``stat``), and appended to under an exclusive lock."""

    def __init__(self, path: Path, retention_ms: int = DEFAULT_RETENTION_MS) -> None:
        self.path = Path(path)
        self.lock_path = self.path.with_suffix(".lock")
        self.retention_ms = retention_ms
        self._seen: tuple[int, int] | None = None  # (inode, bytes read) of the cached cuts
        self._cuts: list[Cut] = []

    def cuts(self) -> list[Cut]:
        """Every cut, oldest first. Only whole lines count: a line still being appended, or
        left half-written by a crash, is not a cut."""
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            self._seen, self._cuts = None, []
            return []
        if self._seen is not None and self._seen == (stat.st_ino, stat.st_size):
            return self._cuts
        start, seen = 0, self._seen
        if seen is not None and seen[0] == stat.st_ino and seen[1] <= stat.st_size:
            start = seen[1]  # appended since: read only the new lines
        else:
            self._cuts = []
        with open(self.path, "rb") as handle:
            handle.seek(start)
            data = handle.read()
        whole = data[: data.rfind(b"\n") + 1]
        self._cuts = self._cuts + [Cut.from_json(line) for line in whole.decode().splitlines()]
        self._seen = (stat.st_ino, start + len(whole))
        return self._cuts

    def newest(self) -> Cut | None:
        cuts = self.cuts()
        return cuts[-1] if cuts else None

    def take(
        self,
        topics: Iterable[str],
        latest_of: Callable[[list[str]], off.OffsetMap],
        min_age_ms: int = 0,
        wait: bool = True,
        now_ms: Callable[[], int] | None = None,
    ) -> Cut | None:
        """Append a cut of ``topics`` and every topic an earlier cut named, unless the newest
        cut already names them all and is younger than ``min_age_ms``; returns the newest cut
        after that. ``latest_of`` lists the topics' last stable offsets (a topic without
        partitions is left out). ``wait`` False gives up (returning None) when another process
        is taking a cut right now, rather than waiting for it."""
        clock = now_ms or _now_ms
        mine = sorted(set(topics))
        with self._locked(wait) as held:
            if not held:
                return None
            newest = self.newest()
            if newest is not None and _names(newest, mine) and clock() - newest.at_ms < min_age_ms:
                return newest
            known = sorted(set(mine) | set(newest.offsets if newest else ()))
            offsets = {t: parts for t, parts in latest_of(known).items() if parts}
            cut = Cut(newest.id + 1 if newest else 0, clock(), offsets)
            kept = self.cuts()
            if newest is not None and not _at_or_after(offsets, newest.offsets):
                kept = []  # the log went back (it was deleted): older cuts point past it
            self._append(cut, kept, clock())
            return cut

    def _append(self, cut: Cut, kept: list[Cut], now: int) -> None:
        expired = [c for c in kept if now - c.at_ms > self.retention_ms]
        if len(kept) != len(self.cuts()) or len(expired) >= PRUNE_AFTER:
            fresh = [c for c in kept if now - c.at_ms <= self.retention_ms]
            write_atomically(self.path, "".join(c.to_json() + "\n" for c in [*fresh, cut]))
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            self._drop_torn_line(fd)
            os.write(fd, (cut.to_json() + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)

    def _drop_torn_line(self, fd: int) -> None:
        """Cut off a line a crash left half-written, so the next one starts on its own line."""
        size = os.fstat(fd).st_size
        if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
            return
        with open(self.path, "rb") as handle:
            data = handle.read()
        os.ftruncate(fd, data.rfind(b"\n") + 1)

    @contextmanager
    def _locked(self, wait: bool) -> Iterator[bool]:
        self.lock_path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            except BlockingIOError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


def _names(cut: Cut, topics: Iterable[str]) -> bool:
    return all(cut.offsets.get(t) for t in topics)


def _at_or_after(offsets: off.OffsetMap, earlier: off.OffsetMap) -> bool:
    return all(
        offsets.get(topic, {}).get(partition, offset) >= offset
        for topic, parts in earlier.items()
        for partition, offset in parts.items()
    )


def _now_ms() -> int:
    return int(time.time() * 1000)
