"""Hand-rolled single-process implementations of the operators' definitions, for comparison.

What a careful engineer would write in plain Python: dicts, a sorted list of versions per key
(``bisect``), a heap of what to forget when the grace horizon passes it. Each consumes records
one by one in reading order, returns the changes of each batch (output key -> row, or None for
a delete) and implements the same rules as the operators: per-partition stream time, late
records skipped, corrections by out-of-order records, pruning below the horizon.
Records are tuples (input, partition, offset, time, id, key, amount_cents, label).
"""

from __future__ import annotations

import heapq
from bisect import bisect_right, insort
from collections.abc import Iterable
from typing import Any

INF = float("inf")


# Periods are compared with //, and -inf // n is nan (every comparison false): "never pruned"
# is None, not -inf.


class Clock:
    """Stream time per (input, partition); lateness; the horizon over a fixed partition set."""

    def __init__(self, inputs: int, partitions: int, grace: int) -> None:
        self.grace = grace
        self.stream_time: dict[tuple[int, int], int] = {}
        self.count = inputs * partitions
        self.late = 0

    def admit(self, which: int, partition: int, t: int) -> bool:
        key = (which, partition)
        current = self.stream_time.get(key)
        if current is None or t > current:
            self.stream_time[key] = t
            return True
        if t < current - self.grace:
            self.late += 1
            return False
        return True

    def horizon(self) -> float:
        if len(self.stream_time) < self.count:
            return -INF
        return min(self.stream_time.values()) - self.grace


class AsOfJoinBaseline:
    """transactions (input 0) joined with customers (input 1) as of the transaction time."""

    def __init__(self, partitions: int, grace: int, prune_every: int) -> None:
        self.clock = Clock(2, partitions, grace)
        self.prune_every = prune_every
        self.pruned_at: float | None = None
        self.versions: dict[str, list[tuple]] = {}  # key -> sorted (t, p, o, country)
        self.rows: dict[str, tuple] = {}  # txn id -> (t, p, o, key, amount, country)
        self.by_key: dict[str, set[str]] = {}
        self.heap: list[tuple[int, str]] = []
        self.multi: set[str] = set()

    def _match(self, key: str, t: int) -> Any:
        found = self.versions.get(key)
        if not found:
            return None
        i = bisect_right(found, (t, INF))
        return found[i - 1][3] if i else None

    def process(self, records: Iterable[tuple]) -> dict[str, Any]:
        changes: dict[str, Any] = {}
        admit = self.clock.admit
        rows = self.rows
        for which, p, o, t, ident, key, amount, label in records:
            if not admit(which, p, t):
                continue
            if which == 1:
                found = self.versions.setdefault(key, [])
                insort(found, (t, p, o, label))
                if len(found) > 1:
                    self.multi.add(key)
                for txn in self.by_key.get(key, ()):
                    row = rows[txn]
                    if row[0] >= t:
                        changes[txn] = (*row, self._match(key, row[0]))
                continue
            old = rows.get(ident)
            if old is not None:
                if old[:3] > (t, p, o):
                    continue
                self.by_key[old[3]].discard(ident)
            row = (t, p, o, key, amount, label)
            rows[ident] = row
            self.by_key.setdefault(key, set()).add(ident)
            heapq.heappush(self.heap, (t, ident))
            changes[ident] = (*row, self._match(key, t))
        horizon = self.clock.horizon()
        if horizon != -INF and (
            self.pruned_at is None
            or horizon // self.prune_every > self.pruned_at // self.prune_every
        ):
            self._prune(horizon)
        return changes

    def _prune(self, horizon: float) -> None:
        self.pruned_at = horizon
        while self.heap and self.heap[0][0] < horizon:
            t, ident = heapq.heappop(self.heap)
            row = self.rows.get(ident)
            if row is not None and row[0] == t:
                del self.rows[ident]
                self.by_key[row[3]].discard(ident)
        for key in list(self.multi):
            found = self.versions[key]
            i = bisect_right(found, (horizon, INF))
            if i > 1:
                del found[: i - 1]
            if len(found) <= 1:
                self.multi.discard(key)


class WindowBaseline:
    """Per key and tumbling window: count, sum (cents) and max of amount."""

    def __init__(self, partitions: int, grace: int, size: int) -> None:
        self.clock = Clock(1, partitions, grace)
        self.size = size
        self.open: dict[tuple[str, int], list[int]] = {}
        self.ends: list[tuple[int, tuple[str, int]]] = []
        self.forgot_at = -INF

    def process(self, records: Iterable[tuple]) -> dict[tuple[str, int], Any]:
        changes: dict[tuple[str, int], Any] = {}
        admit = self.clock.admit
        size = self.size
        windows = self.open
        for which, p, _o, t, _ident, key, amount, _label in records:
            if which != 0 or not admit(which, p, t):
                continue
            start = t - t % size
            window = (key, start)
            agg = windows.get(window)
            if agg is None:
                agg = windows[window] = [0, 0, amount]
                heapq.heappush(self.ends, (start + size, window))
            agg[0] += 1
            agg[1] += amount
            if amount > agg[2]:
                agg[2] = amount
            changes[window] = (agg[0], agg[1], agg[2])
        horizon = self.clock.horizon()
        while self.ends and self.ends[0][0] <= horizon:
            _, window = heapq.heappop(self.ends)
            del windows[window]
        return changes


class IntervalJoinBaseline:
    """Each click (input 0) with its user's latest search (input 1) in [t - before, t]."""

    def __init__(self, partitions: int, grace: int, before: int, prune_every: int) -> None:
        self.clock = Clock(2, partitions, grace)
        self.before = before
        self.prune_every = prune_every
        self.pruned_at: float | None = None
        self.searches: dict[str, list[tuple]] = {}  # user -> sorted (t, p, o, query)
        self.clicks: dict[str, tuple] = {}  # click id -> (t, p, o, user)
        self.by_user: dict[str, set[str]] = {}
        self.heap: list[tuple[int, str]] = []

    def _best(self, user: str, t: int) -> Any:
        found = self.searches.get(user)
        if not found:
            return None
        i = bisect_right(found, (t, INF))
        if i and found[i - 1][0] >= t - self.before:
            return found[i - 1][3]
        return None

    def process(self, records: Iterable[tuple]) -> dict[str, Any]:
        changes: dict[str, Any] = {}
        admit = self.clock.admit
        for which, p, o, t, ident, user, _amount, label in records:
            if not admit(which, p, t):
                continue
            if which == 1:
                found = self.searches.setdefault(user, [])
                insort(found, (t, p, o, label))
                # Trim this user's searches no click can reach any more (lazily, per user).
                reach = -INF if self.pruned_at is None else self.pruned_at - self.before
                if found[0][0] < reach:
                    del found[: bisect_right(found, (reach, -INF))]
                for click in self.by_user.get(user, ()):
                    row = self.clicks[click]
                    if row[0] - self.before <= t <= row[0]:
                        changes[click] = (*row, self._best(user, row[0]))
                continue
            old = self.clicks.get(ident)
            if old is not None:
                if old[:3] > (t, p, o):
                    continue
                self.by_user[old[3]].discard(ident)
            row = (t, p, o, user)
            self.clicks[ident] = row
            self.by_user.setdefault(user, set()).add(ident)
            heapq.heappush(self.heap, (t, ident))
            changes[ident] = (*row, self._best(user, t))
        horizon = self.clock.horizon()
        if horizon != -INF and (
            self.pruned_at is None
            or horizon // self.prune_every > self.pruned_at // self.prune_every
        ):
            self._prune(horizon)
        return changes

    def _prune(self, horizon: float) -> None:
        self.pruned_at = horizon
        while self.heap and self.heap[0][0] < horizon:
            t, ident = heapq.heappop(self.heap)
            row = self.clicks.get(ident)
            if row is not None and row[0] == t:
                del self.clicks[ident]
                self.by_user[row[3]].discard(ident)
