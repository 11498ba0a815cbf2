"""The joins' tricky cases, one per test."""

from __future__ import annotations

import pyarrow as pa
import pytest

from streaming.operators import AsOfJoin, IntervalJoin, OperatorConfigError, Source

from .builders import Feed, records

STREAM = {"id": pa.string(), "k": pa.string(), "ts": pa.int64()}
TABLE = {"k": pa.string(), "v": pa.string(), "at": pa.int64()}


def asof(how: str = "left", grace: int = 100, prune_every: int | None = None) -> AsOfJoin:
    return AsOfJoin(
        Source("s", time="ts"),
        Source("t", time="at", changelog=True),
        on=("k",),
        table_key=("k",),
        key_columns=("id",),
        table_columns={"v": "v"},
        how=how,  # type: ignore[arg-type]
        grace_ms=grace,
        prune_every_ms=prune_every,
    )


def values(feed: Feed) -> dict[str, str | None]:
    return {key[0]: row["v"] for key, row in feed.table.items()}


def test_asof_equal_version_times_go_to_the_higher_partition_and_offset() -> None:
    feed = Feed(asof(), {"s": [0], "t": [0, 1]})
    feed.send(
        s=records(STREAM, [{"p": 0, "o": 0, "id": "x", "k": "a", "ts": 10}]),
        t=records(
            TABLE,
            [
                {"p": 1, "o": 0, "k": "a", "v": "p1", "at": 10},
                {"p": 0, "o": 5, "k": "a", "v": "p0", "at": 10},
                {"p": 1, "o": 1, "k": "a", "v": "later", "at": 11},
            ],
            changelog=True,
        ),
    )
    assert values(feed) == {"x": "p1"}


def test_asof_a_tombstone_as_of_the_time_means_no_match() -> None:
    for how, expected in (("left", {"x": None, "y": "back"}), ("inner", {"y": "back"})):
        feed = Feed(asof(how), {"s": [0], "t": [0]})
        feed.send(
            s=records(
                STREAM,
                [
                    {"p": 0, "o": 0, "id": "x", "k": "a", "ts": 25},
                    {"p": 0, "o": 1, "id": "y", "k": "a", "ts": 35},
                ],
            ),
            t=records(
                TABLE,
                [
                    {"p": 0, "o": 0, "k": "a", "v": "one", "at": 10},
                    {"p": 0, "o": 1, "k": "a", "delete": True, "stamp": 20},
                    {"p": 0, "o": 2, "k": "a", "v": "back", "at": 30},
                ],
                changelog=True,
            ),
        )
        assert values(feed) == expected, how


def test_asof_an_out_of_order_update_within_grace_corrects_emitted_rows() -> None:
    feed = Feed(asof("inner"), {"s": [0], "t": [0]})
    feed.send(
        s=records(
            STREAM,
            [
                {"p": 0, "o": 0, "id": "x", "k": "a", "ts": 50},
                {"p": 0, "o": 1, "id": "y", "k": "b", "ts": 60},
            ],
        ),
        t=records(TABLE, [{"p": 0, "o": 0, "k": "a", "v": "old", "at": 10}], changelog=True),
    )
    assert values(feed) == {"x": "old"}
    changes = feed.send(
        s=records(STREAM, []),
        t=records(
            TABLE,
            [
                {"p": 0, "o": 1, "k": "a", "v": "new", "at": 40},
                {"p": 0, "o": 2, "k": "b", "v": "hello", "at": 55},
                {"p": 0, "o": 3, "k": "a", "v": "future", "at": 70},
            ],
            changelog=True,
        ),
    )
    assert values(feed) == {"x": "new", "y": "hello"}  # re-enriched, and a row that now matches
    assert sorted(changes.column("id").to_pylist()) == ["x", "y"]
    feed.send(
        s=records(STREAM, []),
        t=records(TABLE, [{"p": 0, "o": 4, "k": "b", "delete": True, "stamp": 58}], changelog=True),
    )
    assert values(feed) == {"x": "new"}  # the inner row whose match was deleted is gone


def test_asof_a_version_below_the_horizon_still_matches_after_pruning() -> None:
    feed = Feed(asof(grace=20, prune_every=7), {"s": [0], "t": [0]})
    feed.send(
        s=records(STREAM, [{"p": 0, "o": 0, "id": "x", "k": "a", "ts": 100}]),
        t=records(
            TABLE,
            [
                {"p": 0, "o": 0, "k": "a", "v": "old", "at": 0},
                {"p": 0, "o": 1, "k": "a", "v": "older-but-later", "at": 5},
                {"p": 0, "o": 2, "k": "b", "v": "b", "at": 100},
            ],
            changelog=True,
        ),
    )
    assert feed.state["versions"].num_rows == 2  # the horizon is 80: key a keeps its floor only
    feed.send(
        s=records(STREAM, [{"p": 0, "o": 1, "id": "y", "k": "a", "ts": 110}]),
        t=records(TABLE, [], True),
    )
    assert values(feed)["y"] == "older-but-later"


def test_asof_the_greatest_event_time_defines_a_repeated_output_key() -> None:
    feed = Feed(asof(), {"s": [0, 1], "t": [0]})
    feed.send(
        s=records(STREAM, [{"p": 1, "o": 0, "id": "x", "k": "a", "ts": 50}]),
        t=records(
            TABLE,
            [
                {"p": 0, "o": 0, "k": "a", "v": "A", "at": 1},
                {"p": 0, "o": 1, "k": "b", "v": "B", "at": 1},
            ],
            changelog=True,
        ),
    )
    # Read later, from a lower partition and with an earlier event time: it does not win.
    feed.send(
        s=records(STREAM, [{"p": 0, "o": 0, "id": "x", "k": "b", "ts": 45}]),
        t=records(TABLE, [], True),
    )
    assert feed.table[("x",)]["k"] == "a"
    # The same event time again at a higher offset: the re-sent record wins.
    feed.send(
        s=records(STREAM, [{"p": 1, "o": 1, "id": "x", "k": "b", "ts": 50}]),
        t=records(TABLE, [], True),
    )
    assert feed.table[("x",)]["k"] == "b" and values(feed) == {"x": "B"}


def test_asof_state_stays_bounded_by_the_horizon() -> None:
    feed = Feed(asof(grace=50, prune_every=50), {"s": [0], "t": [0]})
    sizes = []
    for i in range(60):
        rows = [
            {"p": 0, "o": i * 10 + j, "id": f"x{i}-{j}", "k": f"k{j % 3}", "ts": i * 100 + j}
            for j in range(10)
        ]
        table = [{"p": 0, "o": i, "k": f"k{i % 3}", "v": str(i), "at": i * 100}]
        feed.send(s=records(STREAM, rows), t=records(TABLE, table, True))
        sizes.append(feed.rows())
    assert max(sizes[20:]) == max(sizes[10:20])  # flat once the horizon moves
    assert max(sizes) < 40


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"on": ("k", "j")}, "same number"),
        ({"how": "outer"}, "how must be"),
        ({"table_columns": {"v": "k"}, "stream_columns": ("id", "k")}, "clash with stream columns"),
        ({"key_columns": ()}, "output key"),
    ],
)
def test_asof_bad_settings_fail_at_construction(kwargs: dict, message: str) -> None:
    settings = {
        "stream": Source("s", time="ts"),
        "table": Source("t", time="at", changelog=True),
        "on": ("k",),
        "table_key": ("k",),
        "key_columns": ("id",),
        "table_columns": {"v": "v"},
        **kwargs,
    }
    with pytest.raises(OperatorConfigError, match=message):
        AsOfJoin(**settings)


CLICKS = {"click": pa.string(), "user": pa.string(), "ts": pa.int64()}
SEARCHES = {"search": pa.string(), "user": pa.string(), "q": pa.string(), "ts": pa.int64()}


def interval(pick: str = "latest", how: str = "left", after: int = 0) -> IntervalJoin:
    return IntervalJoin(
        Source("c", time="ts"),
        Source("s", time="ts"),
        on=("user",),
        right_on=("user",),
        key_columns=("click",),
        right_columns={"q": "q", "search": "search"},
        before_ms=10,
        after_ms=after,
        how=how,  # type: ignore[arg-type]
        pick=pick,  # type: ignore[arg-type]
        right_key=("search",) if pick == "all" else (),
        grace_ms=100,
    )


def test_interval_bounds_are_inclusive_on_both_ends() -> None:
    feed = Feed(interval(pick="all", how="inner", after=5), {"c": [0], "s": [0]})
    searches = [
        {"p": 0, "o": i, "search": f"s{t}", "user": "u", "q": "q", "ts": t}
        for i, t in enumerate([9, 10, 25, 26])
    ]
    feed.send(
        c=records(CLICKS, [{"p": 0, "o": 0, "click": "c", "user": "u", "ts": 20}]),
        s=records(SEARCHES, searches),
    )
    assert sorted(k[1] for k in feed.table) == ["s10", "s25"]


def test_interval_latest_ties_on_time_go_to_the_higher_partition_and_offset() -> None:
    feed = Feed(interval(), {"c": [0], "s": [0, 1]})
    feed.send(
        c=records(CLICKS, [{"p": 0, "o": 0, "click": "c", "user": "u", "ts": 20}]),
        s=records(
            SEARCHES,
            [
                {"p": 1, "o": 0, "search": "high", "user": "u", "q": "1", "ts": 15},
                {"p": 0, "o": 9, "search": "low", "user": "u", "q": "0", "ts": 15},
            ],
        ),
    )
    assert feed.table[("c",)]["search"] == "high"


def test_interval_a_late_search_within_grace_corrects_the_click() -> None:
    feed = Feed(interval(), {"c": [0], "s": [0]})
    feed.send(
        c=records(CLICKS, [{"p": 0, "o": 0, "click": "c", "user": "u", "ts": 100}]),
        s=records(SEARCHES, [{"p": 0, "o": 0, "search": "early", "user": "u", "q": "e", "ts": 92}]),
    )
    assert feed.table[("c",)]["q"] == "e"
    feed.send(
        c=records(CLICKS, []),
        s=records(
            SEARCHES,
            [
                {"p": 0, "o": 1, "search": "future", "user": "u", "q": "f", "ts": 150},
                {"p": 0, "o": 2, "search": "better", "user": "u", "q": "b", "ts": 97},
            ],
        ),
    )
    assert feed.table[("c",)]["q"] == "b"


@pytest.mark.parametrize("how", ["left", "outer"])
def test_interval_every_match_writes_unmatched_records_once_their_window_closed(how: str) -> None:
    # before 10, after 0, grace 100: a click at 100 can match searches to 100, so it is
    # unmatched for good once the horizon (the least stream time - 100) passes 100; a search at
    # 95 reaches clicks to 105.
    feed = Feed(interval(pick="all", how=how), {"c": [0], "s": [0]})

    sent = {"c": 0, "s": 0}

    def send(clicks: list[tuple[str, str, int]], searches: list[tuple[str, str, int]]) -> None:
        rows = {
            "c": [{"click": c, "user": u, "ts": t} for c, u, t in clicks],
            "s": [{"search": s, "user": u, "q": s, "ts": t} for s, u, t in searches],
        }
        for name, batch in rows.items():
            for row in batch:
                row.update(p=0, o=sent[name])
                sent[name] += 1
        feed.send(c=records(CLICKS, rows["c"]), s=records(SEARCHES, rows["s"]))

    send([("c", "u", 100)], [("s", "v", 95), ("m", "u", 200)])
    assert feed.table == {}  # horizon 0: both might still find a match
    send([("t", "w", 201)], [])
    assert feed.table == {}  # horizon 100: a search at 100 could still come
    send([("t2", "w", 202)], [("n", "x", 202)])
    assert list(feed.table) == [("c", None)] and feed.table[("c", None)]["q"] is None
    send([("t3", "w", 206)], [("n2", "y", 206)])
    expected = [("c", None), (None, "s")] if how == "outer" else [("c", None)]
    assert sorted(feed.table, key=str) == sorted(expected, key=str)
    if how == "outer":
        row = {"click": None, "user": None, "ts": None, "q": "s", "search": "s"}
        assert feed.table[(None, "s")] == row


def test_interval_outer_needs_every_match() -> None:
    with pytest.raises(OperatorConfigError, match="outer"):
        interval(pick="latest", how="outer")


@pytest.mark.parametrize("pick", ["latest", "all"])
def test_interval_state_stays_bounded_by_the_horizon(pick: str) -> None:
    join = IntervalJoin(
        Source("c", time="ts"),
        Source("s", time="ts"),
        on=("user",),
        right_on=("user",),
        key_columns=("click",),
        right_columns={"q": "q", "search": "search"},
        before_ms=30,
        after_ms=10,
        how="left",
        pick=pick,  # type: ignore[arg-type]
        right_key=("search",) if pick == "all" else (),
        grace_ms=50,
        prune_every_ms=50,
    )
    feed = Feed(join, {"c": [0], "s": [0]})
    sizes = []
    for i in range(60):
        clicks = [
            {"p": 0, "o": i * 5 + j, "click": f"c{i}-{j}", "user": f"u{j}", "ts": i * 100 + j}
            for j in range(5)
        ]
        searches = [
            {
                "p": 0,
                "o": i * 5 + j,
                "search": f"s{i}-{j}",
                "user": f"u{j}",
                "q": "q",
                "ts": i * 100 + j,
            }
            for j in range(5)
        ]
        feed.send(c=records(CLICKS, clicks), s=records(SEARCHES, searches))
        sizes.append(feed.rows())
    assert max(sizes[20:]) == max(sizes[10:20])
    assert max(sizes) < 40
