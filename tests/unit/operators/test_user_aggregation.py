"""User-defined aggregations (``Aggregator``): refused when declared wrong, with a message saying
what to fix; failing their batch, naming the aggregation, when a function breaks at run time;
usable in a plan wherever ``Count`` and ``Sum`` are."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pyarrow as pa
import pytest

from pipelines.topics import TRANSACTIONS
from streaming.define import Aggregator, Count, Sliding, Tumbling
from streaming.errors import DefineError
from streaming.operators import BatchError, GroupAggregate, OperatorConfigError, Source

from .builders import Feed, records


class Countries(Aggregator):
    returns = str

    def initial(self) -> list:
        return []

    def add(self, state: list, value: Any) -> list:
        return state if value is None else sorted({*state, value})

    def merge(self, a: list, b: list) -> list:
        return sorted({*a, *b})

    def result(self, state: list) -> str:
        return ",".join(state)


class Top(Aggregator):
    """The ``n`` largest values: a parameter besides the column."""

    returns = pa.list_(pa.int64())

    def __init__(self, column: str, n: int) -> None:
        self.n = n
        super().__init__(column)

    def initial(self) -> list:
        return []

    def add(self, state: list, value: Any) -> list:
        return self.merge(state, [] if value is None else [value])

    def merge(self, a: list, b: list) -> list:
        return sorted(a + b, reverse=True)[: self.n]

    def result(self, state: list) -> list:
        return state


def test_a_group_keeps_its_state_as_json_and_merges_batches() -> None:
    operator = GroupAggregate(Source("e", time="ts"), ("k",), {"top": Top("q", 2), "n": Count()})
    feed = Feed(operator, {"e": [0]})
    fields = {"k": pa.string(), "q": pa.int64(), "ts": pa.int64()}
    feed.send(e=records(fields, [{"p": 0, "o": 0, "k": "a", "q": 5, "ts": 1}]))
    rows = [{"p": 0, "o": i + 1, "k": "a", "q": q, "ts": 2} for i, q in enumerate([9, None, 7])]
    feed.send(e=records(fields, rows))
    assert feed.table[("a",)]["top"] == [9, 7] and feed.table[("a",)]["n"] == 4
    assert feed.state["groups"].column("top").to_pylist() == ["[9,7]"]


def test_a_plan_takes_an_aggregator_wherever_it_takes_count() -> None:
    stream = TRANSACTIONS.stream()
    for window in (None, Tumbling(timedelta(hours=1)), Sliding(timedelta(minutes=5))):
        plan = stream.group_by(
            "customer_id", window=window, aggregations={"countries": Countries("country")}
        )
        assert plan.table_schema().field("countries").type == pa.string()
    described = repr(Top("amount", 3))
    assert described.endswith("Top('amount', n=3)") and Top("a", 3) == Top("a", 3) != Top("a", 4)


def test_a_regrouped_table_refuses_an_aggregator() -> None:
    counts = TRANSACTIONS.stream().group_by("customer_id", aggregations={"n": Count()})
    with pytest.raises(DefineError, match="only Count, Sum and Mean"):
        counts.group_by("n", aggregations={"c": Countries("customer_id")})


def test_bad_declarations_are_refused_when_declared() -> None:
    class NoMerge(Aggregator):
        returns = int

        def initial(self) -> int:
            return 0

        def add(self, state: int, value: Any) -> int:
            return state + 1

        def result(self, state: int) -> int:
            return state

    with pytest.raises(OperatorConfigError, match=r"NoMerge: define merge\(self, a, b\)"):
        NoMerge("q")

    class Untyped(Countries):
        returns = "text"

    with pytest.raises(OperatorConfigError, match="set returns = int, float, str, bool"):
        Untyped("country")

    class TupleState(Countries):
        def initial(self) -> Any:
            return ()

    with pytest.raises(OperatorConfigError, match="a restart would not restore"):
        TupleState("country")
    with pytest.raises(OperatorConfigError, match="give the column"):
        Countries(3)  # type: ignore[arg-type]


def test_a_state_that_is_not_json_or_a_wrong_result_fails_the_batch() -> None:
    class SetState(Countries):
        def add(self, state: list, value: Any) -> Any:
            return {value}

    class Shouting(Countries):
        returns = int

    fields = {"k": pa.string(), "c": pa.string(), "ts": pa.int64()}
    batch = records(fields, [{"p": 0, "o": 0, "k": "a", "c": "DE", "ts": 1}])
    for broken, message in ((SetState, "a restart would not restore"), (Shouting, "not int64")):
        aggregations = {"countries": broken("c")}
        feed = Feed(GroupAggregate(Source("e", time="ts"), ("k",), aggregations), {"e": [0]})
        with pytest.raises(BatchError, match=f"aggregation 'countries'.*{message}"):
            feed.send(e=batch)
