"""Hypothesis strategies: random logs over several inputs and partitions, and batch cuts.

Event times wander: mostly forward, sometimes equal, sometimes back within the grace period and
sometimes back beyond it. Keys come from small pools, so they repeat within and across
partitions; output keys repeat too. Offsets have gaps, as in a compacted topic.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

from hypothesis import strategies as st

from .harness import Scenario
from .reference import Log

GRACE = 10
Draw = Callable[[st.SearchStrategy[Any]], Any]
MakeValues = Callable[[Draw, int], dict[str, Any]]

PARTITIONS = st.sampled_from([1, 1, 2, 3])
STEPS = ["forward", "forward", "forward", "equal", "back", "late"]


def event_times(draw: Draw, count: int, grain: int = 1) -> list[int]:
    """Event times in one partition; with a coarse ``grain`` many of them tie."""
    latest = draw(st.integers(0, 30))
    times = []
    for _ in range(count):
        kind = draw(st.sampled_from(STEPS))
        if kind == "forward":
            t = latest + draw(st.integers(1, 25))
        elif kind == "equal":
            t = latest
        elif kind == "back":
            t = latest - draw(st.integers(1, GRACE))
        else:
            t = latest - draw(st.integers(GRACE + 1, 3 * GRACE))
        if not times:
            t = latest
        t -= t % grain
        times.append(t)
        latest = max(latest, t)
    return times


def input_records(
    draw: Draw,
    name: str,
    partitions: int,
    max_records: int,
    make: MakeValues,
    time: str | None,
    tombstones: bool = False,
    keys: tuple[str, ...] = (),
    grain: int = 1,
) -> list[dict]:
    """Records of one input; ``make(draw, t)`` gives the value columns of a record at time t.

    With ``tombstones``, some records are deletes: their ``keys`` stay, every other column is
    null and their event time is their record timestamp.
    """
    records = []
    for partition in range(partitions):
        count = draw(st.integers(0, max_records))
        offset = draw(st.integers(0, 3))
        for t in event_times(draw, count, grain):
            record = {"partition": partition, "offset": offset, "timestamp": t}
            if tombstones and draw(st.integers(0, 4)) == 0:
                record["delete"] = True
                values = make(draw, t)
                record.update({c: (v if c in keys else None) for c, v in values.items()})
            else:
                record.update(make(draw, t))
                if time is not None:
                    # The record timestamp differs from the event time, so using the wrong one
                    # shows; only a tombstone's event time is its record timestamp.
                    record["timestamp"] = t + draw(st.sampled_from([-7, 0, 9]))
            records.append(record)
            offset += draw(st.sampled_from([1, 1, 1, 2]))
    return records


@st.composite
def cuts(draw: Draw, log: Log, partitions: dict[str, int]) -> Scenario:
    """Random batch boundaries over ``log``: partitions advance unevenly, batches of any size."""
    offsets = {
        name: {
            p: sorted(r["offset"] for r in log[name] if r["partition"] == p)
            for p in range(partitions[name])
        }
        for name in partitions
    }
    taken = {name: dict.fromkeys(range(partitions[name]), 0) for name in partitions}
    batches = draw(st.integers(1, 8))
    prefixes = []
    for index in range(batches):
        for name in partitions:
            for p, found in offsets[name].items():
                remaining = len(found) - taken[name][p]
                step = remaining if index == batches - 1 else draw(st.integers(0, remaining))
                taken[name][p] += step
        prefixes.append(
            {
                name: {
                    p: (found[taken[name][p]] if taken[name][p] < len(found) else _end(found))
                    for p, found in offsets[name].items()
                }
                for name in partitions
            }
        )
    crashes = draw(st.sets(st.integers(0, batches - 1)))
    replays = draw(st.sets(st.integers(0, batches - 1)))
    seed = draw(st.integers(0, 10_000))
    return Scenario(
        log, {n: list(range(c)) for n, c in partitions.items()}, prefixes, crashes, replays, seed
    )


def grains() -> st.SearchStrategy[int]:
    """Time grains: fine (few ties) or coarse (many equal event times)."""
    return st.sampled_from([1, 1, 5, 20])


def _end(found: list[int]) -> int:
    return (found[-1] + 1) if found else 0


def cents(draw: Draw) -> Decimal | None:
    value = draw(st.one_of(st.none(), st.integers(-5000, 5000)))
    return None if value is None else Decimal(value).scaleb(-2)
