"""How far behind the log each table is, in seconds, sampled from outside the platform.

A table's lag at time ``t`` is the age of the oldest record of its inputs that its latest
visible commit does not cover: ``t`` minus the time the log first held that record (the first
sample at which the partition's end passed the committed offset). A table that covers every
record it could see has lag 0. The log's ends are sampled with a plain client and each table's
commits are read from their own log files, so the measure shares no code with the engine's
progress reports.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.processes import commit_info
from streaming.delta.commit_info import parse_commit

Offsets = dict[str, dict[int, int]]


@dataclass
class TableCommits:
    """The commits of one table as they become visible (each log entry read from its file)."""

    path: Path
    seen: int = -1
    commits: list[tuple[float, int, Offsets]] = field(
        default_factory=list
    )  # (seen at, batch, ends)

    def poll(self, now: float) -> None:
        while (info := commit_info(self.path, self.seen + 1)) is not None:
            self.seen += 1
            commit = parse_commit({**info, "version": self.seen})
            if commit is not None:
                self.commits.append((now, commit.batch_id, commit.end_offsets))

    @property
    def latest(self) -> Offsets | None:
        return self.commits[-1][2] if self.commits else None

    def first_seen_after(self, since: float) -> float | None:
        return next((t for t, _, _ in self.commits if t >= since), None)


class LogEnds:
    """Each partition's end offset over time, sampled: when each offset first appeared."""

    def __init__(self, latest: Callable[[list[str]], Offsets], topics: list[str]) -> None:
        self._latest = latest  # topic -> partition -> end offset, now
        self.topics = topics
        self._history: dict[tuple[str, int], tuple[list[int], list[float]]] = {}

    def sample(self, now: float) -> None:
        for topic, parts in self._latest(self.topics).items():
            for partition, end in parts.items():
                ends, times = self._history.setdefault((topic, int(partition)), ([], []))
                if not ends or end > ends[-1]:
                    ends.append(end)
                    times.append(now)

    def arrival(self, topic: str, partition: int, offset: int) -> float | None:
        """When the record at ``offset`` was first seen in the log (None: not yet)."""
        ends, times = self._history.get((topic, partition), ([], []))
        index = bisect.bisect_right(ends, offset)  # the first sampled end beyond the offset
        return times[index] if index < len(ends) else None

    def lag_s(self, committed: Offsets | None, inputs: list[str], now: float) -> float | None:
        """Seconds since the oldest record of ``inputs`` not covered by ``committed``."""
        if committed is None:
            return None
        oldest = now
        for (topic, partition), _ in self._history.items():
            if topic not in inputs:
                continue
            arrived = self.arrival(topic, partition, committed.get(topic, {}).get(partition, 0))
            if arrived is not None:
                oldest = min(oldest, arrived)
        return now - oldest


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0-1) by the nearest rank; NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def summary(values: list[float]) -> dict[str, Any]:
    return {
        "samples": len(values),
        "p50_s": percentile(values, 0.5),
        "p95_s": percentile(values, 0.95),
        "max_s": max(values) if values else float("nan"),
    }
