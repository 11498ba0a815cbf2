"""Event time per input partition: which records are new, which are late, and the horizon.

A partition's stream time is the largest event time read in it so far. A record is late when its
event time is more than the grace period below its partition's stream time just before it; that
depends only on the partition's own order, so every replay agrees. The grace horizon is the
smallest (stream time - grace) over the partitions of the time-checked inputs this state holds,
and unknown (minus infinity) while any of them has no record yet. No record that is not late can
have an event time below the horizon, so state entirely below it is done. The platform keeps one
state per input partition (``streaming.run.copartition``), so a horizon is that partition's own
(Kafka Streams' per-task stream time); a state holding several partitions (a plan run whole)
waits for the slowest.

The clock state table has one row per (input, partition): its stream time and its position (the
next offset not yet applied). Records below the position were applied before (a replayed batch)
and are skipped, which makes applying a batch twice change nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from streaming.operators.batch import OFFSET, PARTITION, TIME, Batch, Source, prepare
from streaming.operators.errors import BatchError
from streaming.state import TableDelta, with_key

CLOCK = "clock"
_KEY = ("input", "partition")
_SCHEMA = pa.schema(
    [
        ("input", pa.string()),
        ("partition", pa.int32()),
        ("stream_time", pa.int64()),
        ("position", pa.int64()),
    ]
)
DEAD_LETTER_SCHEMA = pa.schema(
    [
        ("input", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("reason", pa.string()),
        ("event_time", pa.int64()),
        ("stream_time", pa.int64()),
    ]
)
LATE = "late"


def empty_clock() -> pa.Table:
    """The clock before any batch."""
    return with_key(_SCHEMA.empty_table(), _KEY)


def dead_letters(
    name: str,
    partitions: pa.Array | np.ndarray,
    offsets: pa.Array | np.ndarray,
    reason: str,
    event_times: pa.Array | np.ndarray,
    stream_times: pa.Array | np.ndarray | None = None,
) -> pa.Table:
    """Records of input ``name`` set aside for ``reason`` (DEAD_LETTER_SCHEMA); the stream
    time each was judged against, when there was one."""
    count = len(offsets)
    return pa.table(
        {
            "input": pa.array([name] * count, pa.string()),
            "partition": pa.array(partitions, pa.int32()),
            "offset": pa.array(offsets, pa.int64()),
            "reason": pa.array([reason] * count, pa.string()),
            "event_time": pa.array(event_times, pa.int64()),
            "stream_time": pa.nulls(count, pa.int64())
            if stream_times is None
            else pa.array(stream_times, pa.int64()),
        },
        schema=DEAD_LETTER_SCHEMA,
    )


def empty_dead_letters() -> pa.Table:
    """A dead-letter table with no rows."""
    return DEAD_LETTER_SCHEMA.empty_table()


@dataclass(frozen=True)
class Arrivals:
    """What a batch brings, once replays are skipped and late records set aside.

    Attributes:
        records: per input, the new records that are not late, sorted by (partition, offset),
            with the event time in ``_time``.
        dead_letters: the late records (DEAD_LETTER_SCHEMA).
        clock: the clock after the batch.
        clock_delta: how the clock changed.
        horizon: the grace horizon after the batch, None while unknown (or for unchecked inputs).
        previous_horizon: the grace horizon before the batch.
    """

    records: dict[str, pa.Table]
    dead_letters: pa.Table
    clock: pa.Table
    clock_delta: TableDelta
    horizon: int | None
    previous_horizon: int | None

    def crossed(self, every_ms: int) -> bool:
        """Whether the horizon entered a new period of ``every_ms`` in this batch.

        Operators prune their state then, so pruning costs one pass over the state per period
        of event time instead of one per batch, and a replayed batch (the horizon unchanged)
        prunes nothing.
        """
        if self.horizon is None:
            return False
        if self.previous_horizon is None:
            return True
        return self.horizon // every_ms > self.previous_horizon // every_ms


def horizon_of(clock: pa.Table, inputs: Sequence[str], grace_ms: int) -> int | None:
    """The grace horizon of ``inputs`` on ``clock``, None while some partition has no record."""
    names = clock.column("input").to_pylist()
    times = clock.column("stream_time").to_pylist()
    chosen = [t for name, t in zip(names, times, strict=True) if name in inputs]
    if not chosen or any(t is None for t in chosen):
        return None
    return min(chosen) - grace_ms


def arrive(
    clock: pa.Table | None, batch: Batch, sources: Sequence[Source], grace_ms: int | None
) -> Arrivals:
    """Sort, de-duplicate and time-check one batch against ``clock``.

    ``grace_ms`` None means the operator does not depend on time: nothing is late and there is
    no horizon.

    Raises:
        BatchError: as ``prepare``, or a time-checked input gained partitions after its horizon
            became known (the horizon, and so the definition, depends on the partition set:
            deploy a new version to reprocess).
    """
    clock = empty_clock() if clock is None else clock
    rows = {
        (name, part): [stream_time, position]
        for name, part, stream_time, position in zip(
            *(clock.column(c).to_pylist() for c in _SCHEMA.names), strict=True
        )
    }
    before = {key: list(value) for key, value in rows.items()}
    names = [source.name for source in sources]
    old_horizon = None if grace_ms is None else horizon_of(clock, names, grace_ms)
    records: dict[str, pa.Table] = {}
    letters: list[pa.Table] = []
    for source in sources:
        table = prepare(batch, source)
        ends = batch.ends.get(source.name, {})
        new_parts = sorted(p for p in ends if (source.name, int(p)) not in rows)
        if new_parts and old_horizon is not None:
            msg = (
                f"input {source.name!r} gained partitions {new_parts} after its grace horizon "
                "was known; the results depend on the partition set, so deploy a new version "
                "that reprocesses the input"
            )
            raise BatchError(msg)
        for part in new_parts:
            rows[(source.name, int(part))] = [None, None]
        kept, late = _split(table, source.name, rows, grace_ms)
        records[source.name] = kept
        if late is not None:
            letters.append(late)
        for part, end in ends.items():
            entry = rows[(source.name, int(part))]
            entry[1] = end if entry[1] is None else max(entry[1], end)
    new_clock = _clock_table(rows)
    changed = [key for key, value in rows.items() if before.get(key) != value]
    delta = TableDelta(
        deletes=_clock_table({k: before[k] for k in changed if k in before}).select(list(_KEY)),
        inserts=_clock_table({k: rows[k] for k in changed}),
    )
    dead = pa.concat_tables(letters) if letters else empty_dead_letters()
    horizon = None if grace_ms is None else horizon_of(new_clock, names, grace_ms)
    return Arrivals(records, dead, new_clock, delta, horizon, old_horizon)


def _clock_table(rows: dict[tuple[str, int], list[int | None]]) -> pa.Table:
    keys = sorted(rows)
    table = pa.table(
        {
            "input": [k[0] for k in keys],
            "partition": [k[1] for k in keys],
            "stream_time": [rows[k][0] for k in keys],
            "position": [rows[k][1] for k in keys],
        },
        schema=_SCHEMA,
    )
    return with_key(table, _KEY)


def _split(
    table: pa.Table,
    name: str,
    rows: dict[tuple[str, int], list[int | None]],
    grace_ms: int | None,
) -> tuple[pa.Table, pa.Table | None]:
    """Drop replayed records, then set aside the late ones; updates ``rows`` in place."""
    if table.num_rows == 0:
        return table, None
    partitions = table.column(PARTITION).to_numpy()
    offsets = table.column(OFFSET).to_numpy()
    times = table.column(TIME).to_numpy()
    keep = np.ones(table.num_rows, dtype=bool)
    late = np.zeros(table.num_rows, dtype=bool)
    prior = np.zeros(table.num_rows, dtype=np.int64)
    bounds = np.flatnonzero(np.diff(partitions)) + 1
    for start, stop in zip(
        np.concatenate([[0], bounds]), np.concatenate([bounds, [table.num_rows]]), strict=True
    ):
        entry = rows[(name, int(partitions[start]))]
        position = entry[1]
        segment = slice(start, stop)
        if position is not None:
            keep[segment] = offsets[segment] >= position
        fresh = np.flatnonzero(keep[segment]) + start
        if len(fresh) == 0:
            continue
        seen = times[fresh]
        running = np.maximum.accumulate(seen)
        if entry[0] is not None:
            running = np.maximum(running, entry[0])
        if grace_ms is not None:
            prior_max = np.empty(len(fresh), dtype=np.int64)
            prior_max[1:] = running[:-1]
            has_prior = np.ones(len(fresh), dtype=bool)
            if entry[0] is None:
                has_prior[0] = False
                prior_max[0] = 0
            else:
                prior_max[0] = entry[0]
            late[fresh] = has_prior & (seen < prior_max - grace_ms)
            prior[fresh] = prior_max
        entry[0] = int(running[-1])
    applied = keep & ~late
    dead = None
    if late.any():
        dead = dead_letters(name, partitions[late], offsets[late], LATE, times[late], prior[late])
    if applied.all():
        return table, dead
    return table.filter(applied), dead
