"""Property tests: the joins equal their plain-Python definitions after every batch."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from streaming.operators import AsOfJoin, IntervalJoin, Source

from . import reference
from .harness import InputShape, run
from .logs import GRACE, PARTITIONS, cents, cuts, grains, input_records

TXN = InputShape(
    "transactions",
    {
        "txn_id": pa.string(),
        "cid": pa.int64(),
        "region": pa.string(),
        "amount": pa.decimal128(18, 2),
        "ts": pa.int64(),
    },
)
CUSTOMERS = InputShape(
    "customers",
    {
        "id": pa.int64(),
        "region": pa.string(),
        "country": pa.string(),
        "updated_at": pa.int64(),
    },
    changelog=True,
)


@st.composite
def asof_logs(draw: Any) -> Any:
    parts = {"transactions": draw(PARTITIONS), "customers": draw(PARTITIONS)}
    ids = draw(st.integers(1, 6))
    grain = draw(grains())

    def txn(d: Any, t: int) -> dict:
        return {
            "txn_id": d(st.sampled_from([f"t{i}" for i in range(12)])),
            "cid": d(st.integers(1, ids)),
            "region": d(st.sampled_from(["e", "w"])),
            "amount": cents(d),
            "ts": t,
        }

    def customer(d: Any, t: int) -> dict:
        return {
            "id": d(st.integers(1, ids)),
            "region": d(st.sampled_from(["e", "w"])),
            "country": d(st.sampled_from(["FR", "DE", "NL"])),
            "updated_at": t,
        }

    log = {
        "transactions": input_records(
            draw, "transactions", parts["transactions"], 16, txn, "ts", grain=grain
        ),
        "customers": input_records(
            draw,
            "customers",
            parts["customers"],
            10,
            customer,
            "updated_at",
            True,
            ("id", "region"),
        ),
    }
    return draw(cuts(log, parts))


@pytest.mark.parametrize("how", ["left", "inner"])
@pytest.mark.parametrize("composite", [False, True], ids=["key", "composite-key"])
@given(scenario=asof_logs())
def test_asof_join_equals_its_definition_on_every_prefix(
    scenario: Any, how: str, composite: bool
) -> None:
    on = ("cid", "region") if composite else ("cid",)
    table_key = ("id", "region") if composite else ("id",)
    key = ("txn_id", "cid") if composite else ("txn_id",)
    stream_columns = ("txn_id", "cid", "region", "amount", "ts")
    operator = AsOfJoin(
        stream=Source("transactions", time="ts"),
        table=Source("customers", time="updated_at", changelog=True),
        on=on,
        table_key=table_key,
        key_columns=key,
        table_columns={"country": "customer_country", "updated_at": "customer_updated_at"},
        stream_columns=stream_columns,
        how=how,  # type: ignore[arg-type]
        grace_ms=GRACE,
        prune_every_ms=7,
    )

    def expected(prefix: Any) -> Any:
        return reference.asof_join(
            scenario.log,
            prefix,
            ("transactions", "ts"),
            ("customers", "updated_at"),
            list(on),
            list(table_key),
            list(key),
            list(stream_columns),
            {"country": "customer_country", "updated_at": "customer_updated_at"},
            how,
            GRACE,
        )

    run(operator, [TXN, CUSTOMERS], scenario, expected)


CLICKS = InputShape(
    "clicks", {"click_id": pa.string(), "user": pa.string(), "url": pa.string(), "ts": pa.int64()}
)
SEARCHES = InputShape(
    "searches",
    {"search_id": pa.string(), "user": pa.string(), "query": pa.string(), "ts": pa.int64()},
)


@st.composite
def interval_logs(draw: Any) -> Any:
    parts = {"clicks": draw(PARTITIONS), "searches": draw(PARTITIONS)}
    users = [f"u{i}" for i in range(draw(st.integers(1, 4)))]
    grain = draw(grains())

    def click(d: Any, t: int) -> dict:
        return {
            "click_id": d(st.sampled_from([f"c{i}" for i in range(10)])),
            "user": d(st.sampled_from(users)),
            "url": d(st.sampled_from(["/a", "/b", None])),
            "ts": t,
        }

    def search(d: Any, t: int) -> dict:
        return {
            "search_id": d(st.sampled_from([f"s{i}" for i in range(10)])),
            "user": d(st.sampled_from(users)),
            "query": d(st.sampled_from(["shoes", "hats", None])),
            "ts": t,
        }

    log = {
        "clicks": input_records(draw, "clicks", parts["clicks"], 12, click, "ts", grain=grain),
        "searches": input_records(
            draw, "searches", parts["searches"], 12, search, "ts", grain=grain
        ),
    }
    return draw(cuts(log, parts))


@pytest.mark.parametrize(
    ("how", "pick"),
    [("left", "latest"), ("inner", "latest"), ("inner", "all"), ("left", "all"), ("outer", "all")],
)
@pytest.mark.parametrize("after", [0, 6])
@given(scenario=interval_logs())
def test_interval_join_equals_its_definition_on_every_prefix(
    scenario: Any, how: str, pick: str, after: int
) -> None:
    right_columns = {"query": "search_query", "search_id": "search_id", "ts": "search_ts"}
    operator = IntervalJoin(
        left=Source("clicks", time="ts"),
        right=Source("searches", time="ts"),
        on=("user",),
        right_on=("user",),
        key_columns=("click_id",),
        right_columns=right_columns,
        before_ms=10,
        after_ms=after,
        how=how,  # type: ignore[arg-type]
        pick=pick,  # type: ignore[arg-type]
        right_key=("search_id",) if pick == "all" else (),
        left_columns=("click_id", "user", "url", "ts"),
        grace_ms=GRACE,
        prune_every_ms=7,
    )

    def expected(prefix: Any) -> Any:
        return reference.interval_join(
            scenario.log,
            prefix,
            ("clicks", "ts"),
            ("searches", "ts"),
            ["user"],
            ["user"],
            ["click_id"],
            ["click_id", "user", "url", "ts"],
            right_columns,
            10,
            after,
            how,
            pick,
            ["search_id"],
            GRACE,
        )

    run(operator, [CLICKS, SEARCHES], scenario, expected)
