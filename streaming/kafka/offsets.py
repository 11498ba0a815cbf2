"""Kafka offsets as Spark sees them, and the planning of per-partition ranges.

An offset map is ``{topic: {partition: next_offset}}``; serialised for Spark (and in Delta
commit metadata) it is the same JSON that Spark's built-in Kafka source writes:
``{"customers": {"0": 42, "1": 17}}``. Pure functions only: no broker access here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from streaming.errors import DataLossError, SourceOptionError

OffsetMap = dict[str, dict[int, int]]
EARLIEST = -2
LATEST = -1

# A Spark task costs about 0.1 s to start; below about this many records per task, one task
# reading more partitions is faster than several in parallel.
MIN_TASK_RECORDS = 25_000
# Records per micro-batch unless configured, for a deployment that follows the log: a backlog (a
# restart after downtime) is read in batches of this size, so its first commits come soon.
DEFAULT_BATCH_RECORDS = 250_000
# The same for a run until caught up (a rebuild from the first offset). Every batch pays a fixed
# cost, most of it each task's new consumer and its first fetches, so fewer, larger batches finish
# a backlog sooner: 2,000,000 customer changes took 7.8-7.9 s of batches at this size against
# 9.3-11.6 s at 250,000, and 6.1-7.8 s as one batch (bench/RESULTS.md). The cost is memory: a task
# holds its share of the batch's records and, one partition at a time, their decoding.
CATCH_UP_BATCH_RECORDS = 1_000_000


@dataclass(frozen=True)
class PartitionRange:
    """Records ``[start, end)`` of one topic partition."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def count(self) -> int:
        return max(0, self.end - self.start)


def to_spark(offsets: Mapping[str, Mapping[int, int]]) -> dict[str, dict[str, int]]:
    """Offsets in Spark's JSON shape (string partition keys, sorted)."""
    return {
        topic: {str(p): int(o) for p, o in sorted(parts.items())}
        for topic, parts in sorted(offsets.items())
    }


def from_spark(data: Mapping[str, Mapping[str, int]]) -> OffsetMap:
    return {topic: {int(p): int(o) for p, o in parts.items()} for topic, parts in data.items()}


def dumps(offsets: Mapping[str, Mapping[int, int]]) -> str:
    return json.dumps(to_spark(offsets), separators=(",", ":"))


def loads(text: str) -> OffsetMap:
    return from_spark(json.loads(text))


def parse_starting_offsets(value: str, topics: list[str]) -> str | OffsetMap:
    """Parse the ``startingOffsets`` option: ``earliest``, ``latest`` or a JSON offset map.

    In the JSON form -2 means earliest and -1 latest, as for Spark's Kafka source.
    """
    text = value.strip()
    if text.lower() in ("earliest", "latest"):
        return text.lower()
    try:
        parsed = from_spark(json.loads(text))
    except (json.JSONDecodeError, AttributeError, TypeError, ValueError):
        msg = (
            f"startingOffsets={value!r} is not 'earliest', 'latest' or JSON like "
            '{"topic": {"0": 23, "1": -2}}'
        )
        raise SourceOptionError(msg) from None
    unknown = sorted(set(parsed) - set(topics))
    if unknown:
        msg = f"startingOffsets names topics {unknown} that are not subscribed ({topics})"
        raise SourceOptionError(msg)
    return parsed


def resolve_start(
    spec: str | OffsetMap,
    earliest: OffsetMap,
    latest: OffsetMap,
) -> OffsetMap:
    """Turn a starting-offsets spec into concrete offsets for every known partition."""
    if spec == "earliest":
        return {t: dict(p) for t, p in earliest.items()}
    if spec == "latest":
        return {t: dict(p) for t, p in latest.items()}
    assert isinstance(spec, dict)
    resolved: OffsetMap = {}
    for topic, parts in earliest.items():
        given = spec.get(topic, {})
        resolved[topic] = {}
        for partition, low in parts.items():
            wanted = given.get(partition, EARLIEST)
            if wanted == EARLIEST:
                resolved[topic][partition] = low
            elif wanted == LATEST:
                resolved[topic][partition] = latest[topic][partition]
            else:
                resolved[topic][partition] = wanted
    return resolved


def check_no_data_loss(start: OffsetMap, earliest: OffsetMap, latest: OffsetMap) -> None:
    """Fail when a position to resume from no longer exists in the log.

    Raises:
        DataLossError: a partition vanished, its log end is below the position (the broker
            lost its log, or the topic was recreated), or retention removed records the
            query has not read yet.
    """
    for topic, parts in start.items():
        if topic not in latest:
            msg = f"topic {topic!r} no longer exists but the checkpoint has read it up to {parts}"
            raise DataLossError(msg)
        for partition, position in parts.items():
            if partition not in latest[topic]:
                msg = (
                    f"partition {topic}-{partition} vanished; the checkpoint was at offset "
                    f"{position}"
                )
                raise DataLossError(msg)
            end = latest[topic][partition]
            low = earliest[topic][partition]
            if position > end:
                msg = (
                    f"{topic}-{partition}: the checkpoint is at offset {position} but the log ends "
                    f"at {end}; the broker lost data or the topic was recreated"
                )
                raise DataLossError(msg)
            if position < low:
                msg = (
                    f"{topic}-{partition}: offsets {position}..{low - 1} were removed from the log "
                    f"(retention or deletion) before they were read"
                )
                raise DataLossError(msg)


def add_new_partitions(start: OffsetMap, earliest: OffsetMap) -> OffsetMap:
    """Partitions that appeared since ``start`` was taken are read from their beginning."""
    merged = {t: dict(p) for t, p in start.items()}
    for topic, parts in earliest.items():
        for partition, low in parts.items():
            merged.setdefault(topic, {}).setdefault(partition, low)
    return merged


def cap_offsets(start: OffsetMap, latest: OffsetMap, max_records: int | None) -> OffsetMap:
    """The end offsets of the next batch: everything up to ``latest``, at most ``max_records``.

    The budget is split across partitions in proportion to their backlog (as Spark's Kafka source
    does for ``maxOffsetsPerTrigger``), and every partition with a backlog advances by at least one.
    """
    end = {
        t: {p: max(start.get(t, {}).get(p, o), o) for p, o in parts.items()}
        for t, parts in latest.items()
    }
    if max_records is None:
        return end
    backlog = {
        (t, p): end[t][p] - start.get(t, {}).get(p, end[t][p])
        for t, parts in end.items()
        for p in parts
    }
    total = sum(backlog.values())
    if total <= max_records:
        return end
    capped = {t: dict(parts) for t, parts in end.items()}
    for (topic, partition), lag in backlog.items():
        if lag <= 0:
            continue
        share = max(1, (lag * max_records) // total)
        capped[topic][partition] = start[topic][partition] + min(lag, share)
    return capped


def plan_ranges(start: OffsetMap, end: OffsetMap) -> list[PartitionRange]:
    """One range per partition with records in ``[start, end)``, in topic/partition order."""
    ranges = []
    for topic in sorted(end):
        for partition in sorted(end[topic]):
            low = start.get(topic, {}).get(partition, 0)
            high = end[topic][partition]
            if high > low:
                ranges.append(PartitionRange(topic, partition, low, high))
    return ranges


def pack_ranges(
    ranges: list[PartitionRange],
    max_groups: int | None,
    min_records: int = 0,
    copartition: bool = False,
) -> list[tuple[PartitionRange, ...]]:
    """Pack ``ranges`` into at most ``max_groups`` groups (one Spark task each), never splitting
    a range.

    Fewer, larger tasks cost less than one task per partition when there are more partitions
    than cores (each task has a fixed start-up cost in Spark and in the Python worker): every
    group but the smallest reads at least ``min_records`` records where the ranges allow it, so
    a small batch is one task. Largest unit first into the lightest group, so the groups are
    about equal; within a group the ranges keep topic/partition order. ``max_groups`` None and
    ``min_records`` 0 give one group per unit. A unit is one range, or with ``copartition`` the
    ranges of one partition number across the topics (a stateful plan's state partition, whose
    inputs a task must hold together).
    """
    if not ranges:
        return []
    units: list[list[PartitionRange]]
    if copartition:
        by_number: dict[int, list[PartitionRange]] = {}
        for rng in ranges:
            by_number.setdefault(rng.partition, []).append(rng)
        units = [by_number[number] for number in sorted(by_number)]
    else:
        units = [[r] for r in ranges]
    total = sum(r.count for r in ranges)
    groups = len(units) if max_groups is None else max(1, min(max_groups, len(units)))
    if min_records > 0:
        groups = max(1, min(groups, total // min_records))
    if groups >= len(units):
        return [tuple(unit) for unit in units]
    bins: list[list[PartitionRange]] = [[] for _ in range(groups)]
    sizes = [0] * groups

    def size(unit: list[PartitionRange]) -> int:
        return sum(r.count for r in unit)

    for unit in sorted(units, key=lambda u: (-size(u), u[0].partition, u[0].topic)):
        lightest = sizes.index(min(sizes))
        bins[lightest].extend(unit)
        sizes[lightest] += size(unit)
    ordered = [tuple(sorted(b, key=lambda r: (r.topic, r.partition))) for b in bins]
    return sorted(ordered, key=lambda g: (g[0].topic, g[0].partition))


def total_lag(position: OffsetMap, latest: OffsetMap) -> int:
    return sum(
        max(0, end - position.get(topic, {}).get(partition, 0))
        for topic, parts in latest.items()
        for partition, end in parts.items()
    )
