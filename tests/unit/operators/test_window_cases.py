"""Windows, aggregations and compaction: the tricky cases, one per test."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pyarrow as pa
import pytest

from streaming.operators import (
    Batch,
    BatchError,
    Compaction,
    Count,
    FinalWindows,
    GroupAggregate,
    Hopping,
    Latest,
    Max,
    Mean,
    OperatorConfigError,
    Session,
    Sliding,
    Source,
    Sum,
    Tumbling,
    WindowedAggregate,
)

from .builders import Feed, records

MS = timedelta(milliseconds=1)

FIELDS = {"k": pa.string(), "amount": pa.decimal128(18, 2), "q": pa.int64(), "ts": pa.int64()}


def agg(window, retention=None, grace=10, aggregations=None) -> WindowedAggregate:
    return WindowedAggregate(
        Source("e", time="ts"),
        ("k",),
        window,
        {"n": Count()} if aggregations is None else aggregations,
        grace,
        retention,
    )


def rows(*times: int, start: int = 0, key: str = "a") -> pa.Table:
    return records(
        FIELDS, [{"p": 0, "o": start + i, "k": key, "ts": t} for i, t in enumerate(times)]
    )


def test_session_records_exactly_a_gap_apart_start_separate_sessions() -> None:
    feed = Feed(agg(Session(10 * MS)), {"e": [0]})
    feed.send(e=rows(0, 10, 19))
    assert {k: (v["session_end"], v["n"]) for k, v in feed.table.items()} == {
        ("a", 0): (0, 1),
        ("a", 10): (19, 2),
    }


def test_a_bridging_record_merges_sessions_and_deletes_the_merged_away_rows() -> None:
    feed = Feed(agg(Session(10 * MS), grace=50), {"e": [0]})
    feed.send(e=rows(0, 15, 40))
    assert sorted(feed.table) == [("a", 0), ("a", 15), ("a", 40)]
    changes = feed.send(e=rows(8, start=3))
    assert {k: v["n"] for k, v in feed.table.items()} == {("a", 0): 3, ("a", 40): 1}
    deleted = [r["session_start"] for r in changes.to_pylist() if r["_delete"]]
    assert deleted == [15]


def test_retention_deletes_a_window_once_end_plus_retention_reaches_the_horizon() -> None:
    feed = Feed(agg(Tumbling(100 * MS), retention=30), {"e": [0]})
    feed.send(e=rows(5, 139))  # horizon 129: window [0, 100) stays (100 + 30 > 129)
    assert ("a", 0) in feed.table
    feed.send(e=rows(140, start=2))  # horizon 130 = 100 + 30: deleted
    assert ("a", 0) not in feed.table and ("a", 100) in feed.table


def test_without_retention_final_windows_stay_in_the_output_and_leave_the_state() -> None:
    feed = Feed(agg(Tumbling(10 * MS)), {"e": [0]})
    for i in range(50):
        feed.send(e=rows(i * 10, start=i))
    assert len(feed.table) == 50
    assert feed.state["windows"].num_rows <= 3


def test_final_windows_appear_once_when_the_horizon_passes_their_end() -> None:
    final = FinalWindows(Source("e", time="ts"), ("k",), Tumbling(100 * MS), {"n": Count()}, 10)
    feed = Feed(final, {"e": [0]})
    assert feed.send(e=rows(5, 50, 105)).num_rows == 0  # horizon 95: [0, 100) still open
    assert feed.send(e=rows(95, 109, start=3)).num_rows == 0  # horizon 99; 95 is within grace
    changes = feed.send(e=rows(110, start=5))  # horizon 100 = the end of [0, 100)
    assert changes.to_pylist() == [
        {"k": "a", "window_start": 0, "window_end": 100, "n": 3, "_delete": False}
    ]
    assert feed.send(e=rows(80, 400, start=6)).num_rows == 1  # 80 is late; [100, 200) closes
    assert feed.late == [("e", 0, 6)]
    assert feed.table == {
        ("a", 0): {"k": "a", "window_start": 0, "window_end": 100, "n": 3},
        ("a", 100): {"k": "a", "window_start": 100, "window_end": 200, "n": 3},
    }
    assert feed.state["windows"].num_rows == 1  # only [400, 500) is kept


@pytest.mark.parametrize("window", [Hopping(50 * MS, 20 * MS), Sliding(50 * MS)], ids=repr)
@pytest.mark.parametrize("cap", [1, 3, 997])
def test_final_windows_equal_the_updated_windows_that_closed_whatever_the_batching(
    cap, window
) -> None:
    import random

    rng = random.Random(cap)
    times = [i * 7 - rng.randrange(0, 40) * (rng.random() < 0.2) for i in range(300)]
    keys = [rng.choice("abc") for _ in times]
    feed_rows = [
        {"p": i % 2, "o": i // 2, "k": k, "ts": t}
        for i, (k, t) in enumerate(zip(keys, times, strict=True))
    ]
    final = Feed(
        FinalWindows(Source("e", time="ts"), ("k",), window, {"n": Count()}, 30), {"e": [0, 1]}
    )
    updates = Feed(agg(window, grace=30), {"e": [0, 1]})
    emitted: list[tuple] = []
    for at in range(0, len(feed_rows), cap):
        batch = records(FIELDS, feed_rows[at : at + cap])
        emitted += [(r["k"], r["window_start"]) for r in final.send(e=batch).to_pylist()]
        updates.send(e=batch)
        seen = feed_rows[: at + cap]
        highest = [max((r["ts"] for r in seen if r["p"] == p), default=None) for p in (0, 1)]
        horizon = None if None in highest else min(highest) - 30  # type: ignore[type-var]
        closed = {
            k: v
            for k, v in updates.table.items()
            if horizon is not None and v["window_end"] <= horizon
        }
        assert final.table == closed
    assert len(emitted) == len(set(emitted)) == len(final.table) > 20
    assert final.late == updates.late


def test_final_windows_refuse_sessions_and_retention() -> None:
    with pytest.raises(OperatorConfigError, match="tumbling, hopping or sliding"):
        FinalWindows(Source("e", time="ts"), ("k",), Session(10 * MS), {"n": Count()})
    with pytest.raises(OperatorConfigError, match="without a retention"):
        FinalWindows(Source("e", time="ts"), ("k",), Tumbling(10 * MS), {"n": Count()}, 10, 5)


def test_sliding_windows_are_kafka_streams_windows() -> None:
    # Kafka Streams' example: a time difference of 5 s, records at 8, 9.2 and 12.4 s make the
    # windows [3, 8], [4.2, 9.2], [7.4, 12.4], [8.001, 13.001] and [9.201, 14.201] (ends included).
    feed = Feed(agg(Sliding(timedelta(seconds=5)), grace=60_000), {"e": [0]})
    feed.send(e=rows(8000, 12400))
    feed.send(e=rows(9200, start=2))
    counts = {start: (row["window_end"] - 1, row["n"]) for (_, start), row in feed.table.items()}
    assert counts == {
        3000: (8000, 1),
        4200: (9200, 2),
        7400: (12400, 3),
        8001: (13001, 2),
        9201: (14201, 1),
    }


def test_sliding_windows_take_a_timedelta() -> None:
    with pytest.raises(OperatorConfigError, match="timedelta"):
        Sliding(5000)  # type: ignore[arg-type]
    assert repr(Sliding(timedelta(seconds=5))) == "Sliding(size_ms=5000)"


def test_hopping_windows_count_a_record_in_every_window_covering_it() -> None:
    feed = Feed(agg(Hopping(10 * MS, 4 * MS)), {"e": [0]})
    feed.send(e=rows(9))
    assert sorted(k[1] for k in feed.table) == [0, 4, 8]


def test_an_out_of_order_record_within_grace_reaggregates_its_window() -> None:
    aggregations = {"n": Count(), "total": Sum("amount"), "last": Latest("q"), "avg": Mean("q")}
    feed = Feed(agg(Tumbling(100 * MS), grace=50, aggregations=aggregations), {"e": [0]})
    feed.send(
        e=records(
            FIELDS,
            [
                {"p": 0, "o": 0, "k": "a", "ts": 60, "amount": Decimal("0.10"), "q": 1},
                {"p": 0, "o": 1, "k": "a", "ts": 120, "amount": Decimal("1.00"), "q": 2},
            ],
        )
    )
    feed.send(
        e=records(FIELDS, [{"p": 0, "o": 2, "k": "a", "ts": 70, "amount": Decimal("0.20"), "q": 7}])
    )
    row = feed.table[("a", 0)]
    assert (row["n"], row["total"], row["last"], row["avg"]) == (2, Decimal("0.30"), 7, 4.0)


def test_decimal_sums_are_exact_and_integer_overflow_is_an_error() -> None:
    cents = [Decimal("0.10")] * 1000 + [Decimal("9999999999999999.99")] * 3
    feed = Feed(agg(Tumbling(10**9 * MS), aggregations={"total": Sum("amount")}), {"e": [0]})
    batch = [{"p": 0, "o": i, "k": "a", "ts": 1, "amount": c} for i, c in enumerate(cents)]
    feed.send(e=records(FIELDS, batch))
    assert feed.table[("a", 0)]["total"] == Decimal("30000000000000099.97")
    big = [{"p": 0, "o": i, "k": "a", "ts": 1, "q": 2**62} for i in range(3)]
    operator = agg(Tumbling(10 * MS), aggregations={"s": Sum("q")})
    with pytest.raises(BatchError, match="overflows int64"):
        operator.step(operator.initial_state(), Batch({"e": records(FIELDS, big)}, {"e": {0: 3}}))


def test_one_pass_and_record_by_record_give_the_same_aggregates() -> None:
    aggregations = {"n": Count(), "total": Sum("amount"), "top": Max("amount"), "last": Latest("q")}
    data = [
        {
            "p": i % 2,
            "o": i // 2,
            "k": "ab"[i % 3 % 2],
            "ts": (i * 37) % 50,
            "amount": Decimal(i).scaleb(-2),
            "q": i,
        }
        for i in range(40)
    ]
    whole = Feed(agg(Tumbling(20 * MS), grace=100, aggregations=aggregations), {"e": [0, 1]})
    whole.send(e=records(FIELDS, data))
    single = Feed(agg(Tumbling(20 * MS), grace=100, aggregations=aggregations), {"e": [0, 1]})
    for row in data:
        single.send(e=records(FIELDS, [row]))
    assert whole.table == single.table


def test_group_aggregate_has_no_lateness() -> None:
    feed = Feed(GroupAggregate(Source("e", time="ts"), ("k",), {"n": Count()}), {"e": [0]})
    feed.send(e=rows(1_000_000, 0))
    assert feed.table[("a",)]["n"] == 2 and feed.late == []


CHANGELOG = {"k": pa.string(), "v": pa.int64()}


def test_compaction_a_lower_partition_read_later_does_not_win() -> None:
    feed = Feed(Compaction(Source("c", changelog=True), ("k",)), {"c": [0, 1]})
    feed.send(c=records(CHANGELOG, [{"p": 1, "o": 0, "k": "a", "v": 1}], changelog=True))
    feed.send(c=records(CHANGELOG, [{"p": 0, "o": 50, "k": "a", "v": 2}], changelog=True))
    assert feed.table[("a",)]["v"] == 1


def test_compaction_a_tombstone_deletes_and_a_later_record_recreates() -> None:
    feed = Feed(Compaction(Source("c", changelog=True), ("k",)), {"c": [0]})
    feed.send(
        c=records(
            CHANGELOG,
            [{"p": 0, "o": 0, "k": "a", "v": 1}, {"p": 0, "o": 1, "k": "a", "delete": True}],
            changelog=True,
        )
    )
    assert feed.table == {}
    feed.send(c=records(CHANGELOG, [{"p": 0, "o": 2, "k": "a", "v": 3}], changelog=True))
    assert feed.table[("a",)]["v"] == 3


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Tumbling(0 * MS), "positive"),
        (lambda: Hopping(10 * MS, 20 * MS), "exceeds its size"),
        (lambda: agg(Tumbling(10 * MS), aggregations={}), "at least one aggregation"),
        (lambda: agg(Tumbling(10 * MS), aggregations={"window_start": Count()}), "clashes"),
        (lambda: agg(Tumbling(10 * MS), aggregations={"_n": Count()}), "not starting with"),
        (lambda: agg(Tumbling(10 * MS), retention=-1), "zero or more"),
    ],
)
def test_bad_window_settings_fail_at_construction(build, message) -> None:
    with pytest.raises(OperatorConfigError, match=message):
        build()


@pytest.mark.parametrize(
    "operator",
    [
        GroupAggregate(Source("e", time="ts"), ("k",), {"n": Count(), "top": Max("amount")}),
        agg(
            Tumbling(20 * MS), aggregations={"n": Count(), "avg": Mean("amount"), "q": Latest("q")}
        ),
    ],
    ids=["group", "windowed"],
)
def test_the_declared_output_schema_is_the_schema_of_the_rows_written(operator) -> None:
    batch = rows(1, 2, 30)
    written = Feed(operator, {"e": [0]}).send(e=batch)
    declared = operator.output_schema({"e": batch.schema})
    assert written.schema.remove(written.schema.get_field_index("_delete")) == declared
