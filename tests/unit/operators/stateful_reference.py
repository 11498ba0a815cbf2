"""Plain-Python definitions of stateful functions, for the property tests.

No code is shared with ``streaming``: each function the tests run through the operator is
written here a second time as a loop over a key's records in event order, with timers firing at
their times only at or below the prefix's horizon, and TTLs as "written at t, seen before
t + ttl". The table is the last row each output key was given.
"""

from __future__ import annotations

from collections.abc import Callable

from . import reference
from .reference import Log, Prefix, Record

Table = dict[tuple, dict | None]


def keyed_events(records: list[tuple[int, Record]], by: list[str]) -> dict[tuple, list]:
    """Records grouped by key, each group in event order: (time, input rank, partition,
    offset)."""
    groups: dict[tuple, list] = {}
    for rank, record in records:
        groups.setdefault(tuple(record[c] for c in by), []).append((rank, record))
    for events in groups.values():
        events.sort(key=lambda e: (e[1]["_t"], e[0], e[1]["partition"], e[1]["offset"]))
    return groups


def run_timers(
    events: list[tuple[int, Record]],
    horizon: float,
    on_record: Callable[[int, Record, set[int]], None],
    on_timer: Callable[[int, set[int]], None],
    timers: set[int],
) -> None:
    """Records in order, each due timer (at or below ``horizon``) before the records at or
    after its time; a timer registered at or before the current time moves to the next ms."""
    position = 0
    while True:
        due = min((t for t in timers if t <= horizon), default=None)
        record = events[position] if position < len(events) else None
        if due is not None and (record is None or due <= record[1]["_t"]):
            timers.discard(due)
            on_timer(due, timers)
        elif record is not None:
            on_record(record[0], record[1], timers)
            position += 1
        else:
            return


def register(timers: set[int], at: int, now: int) -> None:
    timers.add(max(at, now + 1))


# The stateful function of test_a_stateful_function_equals_its_definition_on_every_prefix,
# defined again: its state is plain dicts and lists of (value, written at).

TTL_SEEN = 20
TTL_RECENT = 15


class MixedKey:
    """One key of the mixed function: its state as plain dicts and lists."""

    def __init__(self, k: str, table: Table) -> None:
        self.k, self.table = k, table
        self.total = 0
        self.seen: dict[str, tuple[int, int]] = {}
        self.recent: list[tuple[int, int]] = []

    def visible_recent(self, now: int) -> list[int]:
        return [v for v, t in self.recent if now < t + TTL_RECENT]

    def on_record(self, rank: int, r: Record, timers: set[int]) -> None:
        now = r["_t"]
        ident = f"{r['_input']}-{r['partition']}-{r['offset']}"
        if r["_input"] == "a":
            self.total += r["v"]
            self.seen[ident] = (r["v"], now)
            self.recent.append((r["v"], now))
            if r["v"] % 3 == 0:
                register(timers, now + 7, now)
            if r["v"] % 4 == 0:
                timers.discard(now + 3)
                register(timers, now - 2, now)
        else:
            self.total = r["v"]
            if r["v"] % 2 == 0:
                self.recent.clear()
        seen = len([t for _, t in self.seen.values() if now < t + TTL_SEEN])
        info = f"{seen}:{sum(self.visible_recent(now))}"
        self.table[(f"rec-{ident}",)] = {"k": self.k, "n": self.total, "info": info}
        if r["v"] % 5 == 0:
            self.table[(f"sum-{self.k}",)] = None
        else:
            row = {"k": self.k, "n": self.total, "info": r["_input"]}
            self.table[(f"sum-{self.k}",)] = row

    def on_timer(self, at: int, timers: set[int]) -> None:
        info = str(len(self.visible_recent(at)))
        self.table[(f"tim-{self.k}-{at}",)] = {"k": self.k, "n": self.total, "info": info}
        if at % 2:
            self.recent.clear()


def mixed_function(log: Log, prefix: Prefix, grace: int) -> tuple[Table, set]:
    inputs = [("a", "ts"), ("b", "ts")]
    dead = reference.late(log, prefix, inputs, grace)
    horizon = reference.horizon(log, prefix, inputs, grace)
    records = []
    for rank, (name, _) in enumerate(inputs):
        for r in reference.on_time(log, prefix, name, "ts", dead):
            records.append((rank, {**r, "_t": r["ts"], "_input": name}))
    table: Table = {}
    for (k,), events in keyed_events(records, ["k"]).items():
        key = MixedKey(k, table)
        run_timers(events, horizon, key.on_record, key.on_timer, set())
    return {key: row for key, row in table.items() if row is not None}, dead
