"""The operators' definitions, evaluated from scratch on a log prefix in plain Python.

Shares no code with ``streaming.operators``: records are dicts, tables are dicts keyed by tuples,
and every rule is written the slow, obvious way (quadratic where that is clearer).

A log maps an input name to its records; a record is a dict with ``partition``, ``offset``,
``timestamp``, ``delete`` (changelog inputs) and its value columns. A prefix maps an input name to
``{partition: end offset}``.
"""

from __future__ import annotations

import math
from typing import Any

Record = dict[str, Any]
Log = dict[str, list[Record]]
Prefix = dict[str, dict[int, int]]
NEG_INF = -math.inf


def in_prefix(log: Log, prefix: Prefix, name: str) -> list[Record]:
    """The input's records inside the prefix, by (partition, offset)."""
    ends = prefix.get(name, {})
    chosen = [r for r in log.get(name, []) if r["offset"] < ends.get(r["partition"], 0)]
    return sorted(chosen, key=lambda r: (r["partition"], r["offset"]))


def event_time(record: Record, time: str | None) -> int:
    if time is None or record.get("delete"):
        return record["timestamp"]
    return record[time]


def late(log: Log, prefix: Prefix, inputs: list[tuple[str, str | None]], grace: int) -> set:
    """(input, partition, offset) of every late record in the prefix."""
    found = set()
    for name, time in inputs:
        stream_time: dict[int, int] = {}
        for record in in_prefix(log, prefix, name):
            t = event_time(record, time)
            p = record["partition"]
            if p in stream_time and t < stream_time[p] - grace:
                found.add((name, p, record["offset"]))
            stream_time[p] = max(stream_time.get(p, t), t)
    return found


def horizon(log: Log, prefix: Prefix, inputs: list[tuple[str, str | None]], grace: int) -> float:
    """min over every partition of the inputs of (largest event time - grace); -inf if empty."""
    values = []
    for name, time in inputs:
        for partition in prefix.get(name, {}):
            times = [
                event_time(r, time)
                for r in in_prefix(log, prefix, name)
                if r["partition"] == partition
            ]
            if not times:
                return NEG_INF
            values.append(max(times) - grace)
    return min(values) if values else NEG_INF


def on_time(log: Log, prefix: Prefix, name: str, time: str | None, dead: set) -> list[Record]:
    return [
        r for r in in_prefix(log, prefix, name) if (name, r["partition"], r["offset"]) not in dead
    ]


def order(record: Record, time: str | None) -> tuple[int, int, int]:
    return (event_time(record, time), record["partition"], record["offset"])


# compaction and aggregation


def compaction(
    log: Log,
    prefix: Prefix,
    name: str,
    key: list[str],
    columns: list[str],
    position: tuple[str, str] | None = None,
) -> dict:
    """Per key the record with the highest (partition, offset), unless it is a tombstone;
    ``position`` names columns for that record's partition and offset."""
    latest: dict[tuple, Record] = {}
    for record in in_prefix(log, prefix, name):
        k = tuple(record[c] for c in key)
        if k not in latest or (record["partition"], record["offset"]) > (
            latest[k]["partition"],
            latest[k]["offset"],
        ):
            latest[k] = record
    rows = {k: {c: r[c] for c in columns} for k, r in latest.items() if not r.get("delete")}
    if position is not None:
        for k, row in rows.items():
            row.update(zip(position, (latest[k]["partition"], latest[k]["offset"]), strict=True))
    return rows


def aggregate(records: list[Record], aggregations: dict[str, tuple], time: str | None) -> dict:
    """aggregations: output name -> (kind, column)."""
    row = {}
    for name, (kind, column) in aggregations.items():
        values = [r[column] for r in records if column is not None and r[column] is not None]
        if kind == "count":
            row[name] = len(records)
        elif kind == "sum":
            row[name] = sum(values, type(values[0])(0)) if values else None
        elif kind == "min":
            row[name] = min(values) if values else None
        elif kind == "max":
            row[name] = max(values) if values else None
        elif kind == "mean":
            row[name] = float(sum(values, type(values[0])(0))) / len(values) if values else None
        elif kind == "distinct":
            row[name] = ",".join(sorted(set(values)))
        elif kind == "latest":
            row[name] = max(records, key=lambda r: order(r, time))[column]
    return row


def group_aggregate(
    log: Log, prefix: Prefix, name: str, key: list[str], aggregations: dict[str, tuple], time
) -> dict:
    groups: dict[tuple, list[Record]] = {}
    for record in in_prefix(log, prefix, name):
        groups.setdefault(tuple(record[c] for c in key), []).append(record)
    return {k: aggregate(rs, aggregations, time) for k, rs in groups.items()}


def windows_of(t: int, window: tuple) -> list[tuple[int, int]]:
    kind = window[0]
    if kind == "tumbling":
        size = window[1]
        start = (t // size) * size
        return [(start, start + size)]
    size, advance = window[1], window[2]
    found = []
    start = (t // advance) * advance
    while start > t - size:
        found.append((start, start + size))
        start -= advance
    return found


def windowed(
    log: Log,
    prefix: Prefix,
    name: str,
    time: str | None,
    key: list[str],
    window: tuple,
    aggregations: dict[str, tuple],
    grace: int,
    retention: int | None,
) -> tuple[dict, set]:
    """window: ("tumbling", size) | ("hopping", size, advance) | ("session", gap) |
    ("sliding", size)."""
    dead = late(log, prefix, [(name, time)], grace)
    h = horizon(log, prefix, [(name, time)], grace)
    records = on_time(log, prefix, name, time, dead)
    groups: dict[tuple, list[Record]] = {}
    bounds: dict[tuple, int] = {}
    if window[0] == "session":  # keyed by session_start, with session_end (the last time)
        gap = window[1]
        by_key: dict[tuple, list[Record]] = {}
        for record in records:
            by_key.setdefault(tuple(record[c] for c in key), []).append(record)
        for k, rs in by_key.items():
            rs.sort(key=lambda r: event_time(r, time))
            sessions: list[list[Record]] = []
            for record in rs:
                t = event_time(record, time)
                # Sorted by time, so the open session ends at its last record's time + gap.
                if sessions and t < event_time(sessions[-1][-1], time) + gap:
                    sessions[-1].append(record)
                else:
                    sessions.append([record])
            for session in sessions:
                start = event_time(session[0], time)
                groups[(*k, start)] = session
                bounds[(*k, start)] = event_time(session[-1], time) + gap
        table = {}
        for wkey, rs in groups.items():
            if retention is not None and bounds[wkey] + retention <= h:
                continue
            last = bounds[wkey] - gap
            table[wkey] = {"session_end": last, **aggregate(rs, aggregations, time)}
        return table, dead
    if window[0] == "sliding":
        # Kafka Streams' sliding windows: [s, s + size], both ends included, for every start s
        # that is a record's time minus the size or a record's time plus 1, holding a record.
        size = window[1]
        by_key = {}
        for record in records:
            by_key.setdefault(tuple(record[c] for c in key), []).append(record)
        for k, rs in by_key.items():
            times = {event_time(r, time) for r in rs}
            for start in {t - size for t in times} | {t + 1 for t in times}:
                inside = [r for r in rs if start <= event_time(r, time) <= start + size]
                if inside:
                    groups[(*k, start)] = inside
                    bounds[(*k, start)] = start + size + 1
    else:
        for record in records:
            for start, end in windows_of(event_time(record, time), window):
                wkey = (*(record[c] for c in key), start)
                groups.setdefault(wkey, []).append(record)
                bounds[wkey] = end
    table = {}
    for wkey, rs in groups.items():
        end = bounds[wkey]
        if retention is not None and end + retention <= h:
            continue
        table[wkey] = {"window_end": end, **aggregate(rs, aggregations, time)}
    return table, dead


# joins


def asof_join(
    log: Log,
    prefix: Prefix,
    stream: tuple[str, str | None],
    table: tuple[str, str | None],
    on: list[str],
    table_key: list[str],
    key: list[str],
    stream_columns: list[str],
    table_columns: dict[str, str],
    how: str,
    grace: int,
) -> tuple[dict, set]:
    dead = late(log, prefix, [stream, table], grace)
    streams = on_time(log, prefix, stream[0], stream[1], dead)
    versions = on_time(log, prefix, table[0], table[1], dead)
    defining: dict[tuple, Record] = {}
    for s in streams:
        k = tuple(s[c] for c in key)
        if k not in defining or order(s, stream[1]) > order(defining[k], stream[1]):
            defining[k] = s
    out = {}
    for k, s in defining.items():
        t = event_time(s, stream[1])
        candidates = [
            v
            for v in versions
            if [v[c] for c in table_key] == [s[c] for c in on] and event_time(v, table[1]) <= t
        ]
        match = max(candidates, key=lambda v: order(v, table[1])) if candidates else None
        if match is not None and match.get("delete"):
            match = None
        if match is None and how == "inner":
            continue
        row = {c: s[c] for c in stream_columns}
        for column, output in table_columns.items():
            row[output] = None if match is None else match[column]
        out[k] = row
    return out, dead


def interval_join(
    log: Log,
    prefix: Prefix,
    left: tuple[str, str | None],
    right: tuple[str, str | None],
    on: list[str],
    right_on: list[str],
    key: list[str],
    left_columns: list[str],
    right_columns: dict[str, str],
    before: int,
    after: int,
    how: str,
    pick: str,
    right_key: list[str],
    grace: int,
) -> tuple[dict, set]:
    dead = late(log, prefix, [left, right], grace)
    lefts = on_time(log, prefix, left[0], left[1], dead)
    rights = on_time(log, prefix, right[0], right[1], dead)

    def matches(l_record: Record) -> list[Record]:
        t = event_time(l_record, left[1])
        return [
            r
            for r in rights
            if [r[c] for c in right_on] == [l_record[c] for c in on]
            and t - before <= event_time(r, right[1]) <= t + after
        ]

    def row(l_record: Record, r_record: Record | None) -> dict:
        values = {c: l_record[c] for c in left_columns}
        for column, output in right_columns.items():
            values[output] = None if r_record is None else r_record[column]
        return values

    greatest: dict[tuple, Record] = {}
    for l_record in lefts:
        k = tuple(l_record[c] for c in key)
        if k not in greatest or order(l_record, left[1]) > order(greatest[k], left[1]):
            greatest[k] = l_record
    out: dict[tuple, dict] = {}
    if pick == "latest":
        for k, l_record in greatest.items():
            found = matches(l_record)
            best = max(found, key=lambda r: order(r, right[1])) if found else None
            if best is None and how == "inner":
                continue
            out[k] = row(l_record, best)
        return out, dead
    best_pair: dict[tuple, tuple] = {}
    for l_record in lefts:
        for r_record in matches(l_record):
            pk = (*(l_record[c] for c in key), *(r_record[c] for c in right_key))
            rank = (order(l_record, left[1]), order(r_record, right[1]))
            if pk not in best_pair or rank > best_pair[pk][0]:
                best_pair[pk] = (rank, l_record, r_record)
    for pk, (_, l_record, r_record) in best_pair.items():
        out[pk] = row(l_record, r_record)
    # Left and outer: records without a match once the horizon passed the last time a match
    # could have; per output key the greatest of them.
    h = horizon(log, prefix, [left, right], grace)
    lonely: dict[tuple, Record] = {}
    if how in ("left", "outer"):
        for l_record in lefts:
            if event_time(l_record, left[1]) + after < h and not matches(l_record):
                k = (*(l_record[c] for c in key), *(None for _ in right_key))
                if k not in lonely or order(l_record, left[1]) > order(lonely[k], left[1]):
                    lonely[k] = l_record
        out.update({k: row(l_record, None) for k, l_record in lonely.items()})
    if how == "outer":
        alone: dict[tuple, Record] = {}
        for r_record in rights:
            t = event_time(r_record, right[1])
            reached = [
                lr
                for lr in lefts
                if [lr[c] for c in on] == [r_record[c] for c in right_on]
                and t - after <= event_time(lr, left[1]) <= t + before
            ]
            if t + before < h and not reached:
                k = (*(None for _ in key), *(r_record[c] for c in right_key))
                if k not in alone or order(r_record, right[1]) > order(alone[k], right[1]):
                    alone[k] = r_record
        for k, r_record in alone.items():
            values = dict.fromkeys(left_columns)
            values.update({out_name: r_record[c] for c, out_name in right_columns.items()})
            out[k] = values
    return out, dead
