"""Property tests: windows, aggregation and compaction equal their definitions after every batch."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from streaming.operators import (
    Aggregator,
    Compaction,
    Count,
    GroupAggregate,
    Hopping,
    Latest,
    Max,
    Mean,
    Min,
    Session,
    Sliding,
    Source,
    Sum,
    Tumbling,
    WindowedAggregate,
)

from . import reference
from .harness import InputShape, run
from .logs import GRACE, PARTITIONS, cents, cuts, grains, input_records

EVENTS = InputShape(
    "events",
    {
        "k": pa.string(),
        "k2": pa.int64(),
        "amount": pa.decimal128(18, 2),
        "q": pa.int64(),
        "f": pa.float64(),
        "note": pa.string(),
        "ts": pa.int64(),
    },
)


class Notes(Aggregator):
    """The distinct notes, sorted and comma-separated (a user-defined aggregation)."""

    returns = str

    def initial(self) -> list:
        return []

    def add(self, state: list, value: str | None) -> list:
        return state if value is None else sorted({*state, value})

    def merge(self, a: list, b: list) -> list:
        return sorted({*a, *b})

    def result(self, state: list) -> str:
        return ",".join(state)


AGGREGATIONS = {
    "n": Count(),
    "total": Sum("amount"),
    "q_sum": Sum("q"),
    "q_min": Min("q"),
    "top": Max("amount"),
    "f_mean": Mean("f"),
    "amount_mean": Mean("amount"),
    "note": Latest("note"),
    "notes": Notes("note"),
}
REFERENCE_AGGREGATIONS = {
    "n": ("count", None),
    "total": ("sum", "amount"),
    "q_sum": ("sum", "q"),
    "q_min": ("min", "q"),
    "top": ("max", "amount"),
    "f_mean": ("mean", "f"),
    "amount_mean": ("mean", "amount"),
    "note": ("latest", "note"),
    "notes": ("distinct", "note"),
}


@st.composite
def event_logs(draw: Any, tombstones: bool = False) -> Any:
    parts = {"events": draw(PARTITIONS)}
    keys = ["a", "b", "c", "d"][: draw(st.integers(1, 4))]
    grain = draw(grains())

    def event(d: Any, t: int) -> dict:
        return {
            "k": d(st.sampled_from(keys)),
            "k2": d(st.integers(0, 1)),
            "amount": cents(d),
            "q": d(st.one_of(st.none(), st.integers(-50, 50))),
            "f": d(st.one_of(st.none(), st.floats(-100, 100, allow_nan=False))),
            "note": d(st.sampled_from(["x", "y", None])),
            "ts": t,
        }

    log = {
        "events": input_records(
            draw, "events", parts["events"], 16, event, "ts", tombstones, ("k", "k2"), grain
        )
    }
    return draw(cuts(log, parts))


MS = timedelta(milliseconds=1)
WINDOWS = {
    "tumbling": (Tumbling(10 * MS), ("tumbling", 10)),
    "hopping": (Hopping(12 * MS, 5 * MS), ("hopping", 12, 5)),
    "session": (Session(6 * MS), ("session", 6)),
    "sliding": (Sliding(7 * MS), ("sliding", 7)),
}


@pytest.mark.parametrize("window", sorted(WINDOWS))
@pytest.mark.parametrize("retention", [None, 0, 7])
@given(scenario=event_logs())
def test_windowed_aggregate_equals_its_definition_on_every_prefix(
    scenario: Any, window: str, retention: int | None
) -> None:
    operator = WindowedAggregate(
        source=Source("events", time="ts"),
        key_columns=("k", "k2"),
        window=WINDOWS[window][0],
        aggregations=AGGREGATIONS,
        grace_ms=GRACE,
        retention_ms=retention,
    )

    def expected(prefix: Any) -> Any:
        return reference.windowed(
            scenario.log,
            prefix,
            "events",
            "ts",
            ["k", "k2"],
            WINDOWS[window][1],
            REFERENCE_AGGREGATIONS,
            GRACE,
            retention,
        )

    run(operator, [EVENTS], scenario, expected)


@given(scenario=event_logs())
def test_group_aggregate_equals_its_definition_on_every_prefix(scenario: Any) -> None:
    operator = GroupAggregate(Source("events", time="ts"), ("k",), AGGREGATIONS)

    def expected(prefix: Any) -> Any:
        table = reference.group_aggregate(
            scenario.log, prefix, "events", ["k"], REFERENCE_AGGREGATIONS, "ts"
        )
        return table, set()

    run(operator, [EVENTS], scenario, expected)


CHANGELOG = InputShape("events", EVENTS.fields, changelog=True)


@pytest.mark.parametrize("position", [None, ("at_partition", "at_offset")], ids=["", "position"])
@pytest.mark.parametrize("key", [("k",), ("k", "k2")], ids=["key", "composite-key"])
@given(scenario=event_logs(tombstones=True))
def test_compaction_equals_its_definition_on_every_prefix(
    scenario: Any, key: tuple, position: tuple[str, str] | None
) -> None:
    operator = Compaction(Source("events", changelog=True), key, ("q", "note"), position)

    def expected(prefix: Any) -> Any:
        columns = ["q", "note"]
        table = reference.compaction(scenario.log, prefix, "events", list(key), columns, position)
        return table, set()

    run(operator, [CHANGELOG], scenario, expected)
