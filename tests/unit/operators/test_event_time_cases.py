"""Lateness, the horizon and the input contract, case by case."""

from __future__ import annotations

from datetime import timedelta

import pyarrow as pa
import pytest

from streaming.operators import (
    AsOfJoin,
    Batch,
    BatchError,
    Count,
    Source,
    Tumbling,
    WindowedAggregate,
)

from .builders import Feed, records

MS = timedelta(milliseconds=1)

FIELDS = {"k": pa.string(), "ts": pa.int64()}


def windows(retention: int | None = None, grace: int = 10) -> WindowedAggregate:
    return WindowedAggregate(
        Source("e", time="ts"), ("k",), Tumbling(100 * MS), {"n": Count()}, grace, retention
    )


def test_a_record_exactly_grace_below_its_stream_time_is_not_late() -> None:
    feed = Feed(windows(), {"e": [0]})
    feed.send(
        e=records(
            FIELDS, [{"p": 0, "o": 0, "k": "a", "ts": 50}, {"p": 0, "o": 1, "k": "a", "ts": 40}]
        )
    )
    feed.send(e=records(FIELDS, [{"p": 0, "o": 2, "k": "a", "ts": 39}]))
    assert feed.late == [("e", 0, 2)]
    assert feed.table[("a", 0)]["n"] == 2
    letter = feed.last.dead_letters.to_pylist()[0]
    assert (letter["reason"], letter["event_time"], letter["stream_time"]) == ("late", 39, 50)


def test_lateness_is_judged_per_partition() -> None:
    feed = Feed(windows(), {"e": [0, 1]})
    feed.send(
        e=records(
            FIELDS, [{"p": 0, "o": 0, "k": "a", "ts": 500}, {"p": 1, "o": 0, "k": "a", "ts": 5}]
        )
    )
    assert feed.late == []
    assert feed.table[("a", 0)]["n"] == 1 and feed.table[("a", 500)]["n"] == 1


def test_the_first_record_of_a_partition_is_never_late() -> None:
    feed = Feed(windows(), {"e": [0]})
    feed.send(e=records(FIELDS, [{"p": 0, "o": 7, "k": "a", "ts": -1_000_000}]))
    assert feed.late == [] and len(feed.table) == 1


def test_row_order_in_the_batch_does_not_matter() -> None:
    rows = [{"p": 0, "o": i, "k": "a", "ts": t} for i, t in enumerate([50, 30, 45, 10])]
    forward = Feed(windows(), {"e": [0]})
    forward.send(e=records(FIELDS, rows))
    backward = Feed(windows(), {"e": [0]})
    backward.send(e=records(FIELDS, list(reversed(rows))))
    assert forward.late == backward.late == [("e", 0, 1), ("e", 0, 3)]
    assert forward.table == backward.table


def test_an_idle_partition_keeps_the_horizon_unknown_so_nothing_expires() -> None:
    feed = Feed(windows(retention=0), {"e": [0, 1]})
    feed.send(
        e=records(
            FIELDS, [{"p": 0, "o": 0, "k": "a", "ts": 5}, {"p": 0, "o": 1, "k": "a", "ts": 900}]
        )
    )
    assert ("a", 0) in feed.table  # partition 1 has no record: the horizon is -inf
    feed.send(e=records(FIELDS, [{"p": 1, "o": 0, "k": "b", "ts": 800}]))
    assert ("a", 0) not in feed.table  # horizon 790 >= end 100 + retention 0


def test_a_partition_added_after_the_horizon_is_known_is_refused() -> None:
    feed = Feed(windows(), {"e": [0]})
    feed.send(e=records(FIELDS, [{"p": 0, "o": 0, "k": "a", "ts": 5}]))
    feed.ends["e"][1] = 0
    with pytest.raises(BatchError, match=r"gained partitions \[1\].*new version"):
        feed.send(e=records(FIELDS, []))


def test_a_replayed_batch_changes_nothing() -> None:
    feed = Feed(windows(), {"e": [0]})
    batch = records(
        FIELDS, [{"p": 0, "o": 0, "k": "a", "ts": 5}, {"p": 0, "o": 1, "k": "a", "ts": 50}]
    )
    feed.send(e=batch)
    again = feed.operator.step(feed.state, Batch({"e": batch}, {"e": {0: 2}}))
    assert again.changes.num_rows == 0 and again.dead_letters.num_rows == 0
    assert all(change.empty for change in again.delta.values())


def test_the_tombstone_event_time_is_its_record_timestamp() -> None:
    join = AsOfJoin(
        Source("s", time="ts"),
        Source("t", time="at", changelog=True),
        ("k",),
        ("k",),
        ("id",),
        {"v": "v"},
        how="inner",
        grace_ms=1000,
    )
    feed = Feed(join, {"s": [0], "t": [0]})
    table = {"k": pa.string(), "v": pa.string(), "at": pa.int64()}
    stream = {"id": pa.string(), "k": pa.string(), "ts": pa.int64()}
    feed.send(
        s=records(
            stream,
            [
                {"p": 0, "o": 0, "id": "x", "k": "a", "ts": 20},
                {"p": 0, "o": 1, "id": "y", "k": "a", "ts": 40},
            ],
        ),
        t=records(
            table,
            [
                {"p": 0, "o": 0, "k": "a", "v": "one", "at": 10, "stamp": 99},
                {"p": 0, "o": 1, "k": "a", "delete": True, "stamp": 30},
            ],
            changelog=True,
        ),
    )
    # The version's time is its 'at' column (10, not 99); the tombstone's is its stamp (30).
    assert feed.table == {("x",): {"id": "x", "k": "a", "ts": 20, "v": "one"}}


@pytest.mark.parametrize(
    ("rows", "ends", "message"),
    [
        ([{"p": 0, "o": 5, "k": "a", "ts": 1}], {0: 5}, "at or past the batch's end offset 5"),
        ([{"p": 3, "o": 0, "k": "a", "ts": 1}], {0: 5}, "partition 3 but the batch's ends"),
        (
            [{"p": 0, "o": 1, "k": "a", "ts": 1}, {"p": 0, "o": 1, "k": "b", "ts": 2}],
            {0: 5},
            "offset 1 occurs twice",
        ),
        ([{"p": 0, "o": 1, "k": "a", "ts": None}], {0: 5}, "offset 1 has no event time"),
    ],
    ids=["offset-past-end", "unknown-partition", "repeated-offset", "no-event-time"],
)
def test_batches_breaking_the_contract_are_refused_clearly(rows, ends, message) -> None:
    operator = windows()
    with pytest.raises(BatchError, match=message):
        operator.step(operator.initial_state(), Batch({"e": records(FIELDS, rows)}, {"e": ends}))


def test_a_missing_input_or_column_is_named() -> None:
    operator = windows()
    with pytest.raises(BatchError, match="no records table for input 'e'"):
        operator.step(operator.initial_state(), Batch({}, {}))
    bare = records({"k": pa.string()}, [{"p": 0, "o": 0, "k": "a"}])
    with pytest.raises(BatchError, match="lacks the columns \\['ts'\\]"):
        operator.step(operator.initial_state(), Batch({"e": bare}, {"e": {0: 1}}))
