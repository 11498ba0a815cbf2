"""Every old spelling of the authoring API still works, warns with the new spelling, and declares
exactly what the new one does: the same plan, the same fingerprint."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from datetime import timedelta
from typing import TypeVar

import pyarrow as pa
import pytest

from quality.rules import NotInFuture
from streaming.define import (
    Accumulate,
    Count,
    Hopping,
    LatestPerKey,
    Mean,
    Pipeline,
    Session,
    Topic,
    Tumbling,
)
from streaming.operators import OperatorConfigError

TRADES = Topic(
    "trades",
    key="ticker",
    value_schema="ticker string, price double, ts bigint",
    time="ts",
)
CHANGES = Topic("changes", key="id", value_schema="id string, name string", tombstones="delete")
STATS = {"n": Count(), "avg": Mean("price")}
T = TypeVar("T")


def _new(build: Callable[[], T]) -> T:
    """What ``build`` declares, which must not warn (it is the new spelling)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        return build()


@pytest.mark.parametrize(
    ("old", "new", "says"),
    [
        (lambda: Tumbling(size_ms=60_000), lambda: Tumbling(timedelta(minutes=1)), "size="),
        (lambda: Tumbling(60_000), lambda: Tumbling(size=timedelta(minutes=1)), "size="),
        (
            lambda: Hopping(size_ms=300_000, advance_ms=60_000),
            lambda: Hopping(size=timedelta(minutes=5), advance=timedelta(minutes=1)),
            "advance=",
        ),
        (
            lambda: Hopping(300_000, 60_000),
            lambda: Hopping(timedelta(minutes=5), timedelta(minutes=1)),
            "size=",
        ),
        (lambda: Session(gap_ms=30_000), lambda: Session(gap=timedelta(seconds=30)), "gap="),
        (lambda: Session(30_000), lambda: Session(timedelta(seconds=30)), "gap="),
    ],
)
def test_a_window_in_milliseconds_warns_and_is_the_same_window(old, new, says) -> None:  # type: ignore[no-untyped-def]
    with pytest.warns(DeprecationWarning, match=f"deprecated: give {says}"):
        before = old()
    after = _new(new)
    assert before == after and repr(before) == repr(after) and hash(before) == hash(after)


def test_a_window_keeps_its_millisecond_repr_so_fingerprints_stay() -> None:
    assert repr(Tumbling(timedelta(hours=1))) == "Tumbling(size_ms=3600000)"
    assert repr(Hopping(timedelta(minutes=5), timedelta(minutes=1))) == (
        "Hopping(size_ms=300000, advance_ms=60000)"
    )
    assert repr(Session(timedelta(seconds=3))) == "Session(gap_ms=3000)"
    assert Tumbling(timedelta(hours=1)).size_ms == 3_600_000


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Tumbling(), "give size= as a timedelta"),
        (lambda: Tumbling(timedelta(0)), "positive"),
        (lambda: Tumbling(timedelta(microseconds=1500)), "whole number of milliseconds"),
        (lambda: Tumbling(timedelta(1), size_ms=5), "not both"),
        (lambda: Tumbling("1h"), "must be a timedelta"),  # type: ignore[arg-type]
        (lambda: Hopping(timedelta(minutes=1), timedelta(minutes=2)), "exceeds its size"),
        (lambda: Session(timedelta(seconds=-1)), "positive"),
    ],
)
def test_a_bad_window_length_fails_with_what_to_fix(build, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(OperatorConfigError, match=message):
        build()


def test_stream_window_warns_and_is_group_by_with_a_window() -> None:
    window = Tumbling(timedelta(minutes=1))
    with pytest.warns(DeprecationWarning, match=r"stream.group_by\('ticker', window="):
        old = TRADES.stream().window(window, by="ticker", aggregations=STATS, emit="final")
    new = _new(
        build=lambda: TRADES.stream().group_by(
            "ticker", window=window, aggregations=STATS, emit="final"
        )
    )
    assert old == new and old.describe() == new.describe()
    one = Pipeline(name="stats", version="v1", plan=old)
    other = Pipeline(name="stats", version="v1", plan=new)
    assert one.fingerprint == other.fingerprint


def test_a_plan_in_milliseconds_has_the_fingerprint_of_the_plan_in_timedeltas() -> None:
    with pytest.warns(DeprecationWarning):
        old = TRADES.stream().window(Tumbling(size_ms=60_000), by="ticker", aggregations=STATS)
    new = TRADES.stream().group_by(
        "ticker", window=Tumbling(timedelta(minutes=1)), aggregations=STATS
    )
    one = Pipeline(name="stats", version="v1", plan=old)
    assert one.fingerprint == Pipeline(name="stats", version="v1", plan=new).fingerprint


def test_publish_as_a_string_warns_and_is_publish_as_a_topic() -> None:
    plan = CHANGES.table().rows()
    with pytest.warns(DeprecationWarning, match=r"publish=Topic\('names'\)"):
        old = Pipeline(name="names", version="v1", plan=plan, publish="names")
    new = _new(lambda: Pipeline(name="names", version="v1", plan=plan, publish=Topic("names")))
    assert old == new and old.publish == "names" and old.fingerprint == new.fingerprint
    assert old.output_topic() == new.output_topic()


def test_replacing_a_field_of_a_publishing_pipeline_does_not_warn() -> None:
    pipeline = Pipeline(
        name="names", version="v1", plan=CHANGES.table().rows(), publish=Topic("names")
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        v2 = dataclasses.replace(pipeline, version="v2")
    assert v2.publish == "names" and v2.version == "v2"


def _transform(records):  # type: ignore[no-untyped-def]
    return records


def test_a_transform_warns_with_how_to_write_it_as_a_plan_and_still_declares_a_pipeline() -> None:
    schema = CHANGES.schema().append(pa.field("partition", pa.int32()))
    schema = schema.append(pa.field("offset", pa.int64()))
    table = LatestPerKey(key="id", position=("partition", "offset"))
    with pytest.warns(DeprecationWarning, match=r"TOPIC.table\(\).rows\(position=\('partition'"):
        latest = Pipeline(
            name="names",
            version="v1",
            topics=(CHANGES,),
            transform=_transform,
            table=table,
            table_schema=schema,
        )
    assert latest.table is table and latest.table_schema is schema and latest.plan is None
    assert latest.topics == ("changes",) and latest.accepts_tombstones
    assert latest.value_schema == CHANGES.value_schema and len(latest.fingerprint) == 16
    totals = Accumulate(key="ticker", updates={"n": "t.n + s.n"})
    with pytest.warns(DeprecationWarning, match=r"TOPIC.stream\(\).group_by\('ticker'"):
        Pipeline(
            name="totals",
            version="v1",
            topics=(TRADES,),
            transform=_transform,
            table=totals,
            table_schema=pa.schema([("ticker", pa.string()), ("n", pa.int64())]),
        )


def test_a_tolerance_in_milliseconds_warns_and_is_the_same_rule() -> None:
    with pytest.warns(DeprecationWarning, match=r"tolerance=timedelta\(milliseconds=300000\)"):
        old = NotInFuture("ts", tolerance_ms=300_000)
    with pytest.warns(DeprecationWarning):
        positional = NotInFuture("ts", 300_000)  # type: ignore[arg-type]
    new = _new(lambda: NotInFuture("ts", tolerance=timedelta(minutes=5)))
    assert old == positional == new
    assert old.expectation(1_000) == new.expectation(1_000)
    assert new.tolerance_ms == 300_000


def test_the_transform_forms_table_kinds_from_the_top_package_warn() -> None:
    import streaming
    import streaming.define

    with pytest.warns(DeprecationWarning, match="streaming.define.LatestPerKey"):
        assert streaming.LatestPerKey is streaming.define.LatestPerKey
    with pytest.warns(DeprecationWarning, match="streaming.define.Accumulate"):
        assert streaming.Accumulate is streaming.define.Accumulate
    with pytest.raises(AttributeError):
        streaming.Nope  # noqa: B018


def test_a_transforms_topics_declare_its_value_schema_once() -> None:
    from pipelines.topics import CUSTOMERS, FRAUD_ALERTS, TRANSACTIONS
    from streaming.errors import DefineError

    def build(**fields):  # type: ignore[no-untyped-def]
        with pytest.warns(DeprecationWarning, match="transform is deprecated"):
            return Pipeline(
                name="p",
                version="v1",
                transform=_transform,
                table=LatestPerKey(key="customer_id"),
                table_schema=CUSTOMERS.schema(),
                **fields,
            )

    assert build(topics=(CUSTOMERS,)).required == ("name", "email", "country", "updated_at")
    with pytest.raises(DefineError, match="leave value_schema, required"):
        build(topics=(CUSTOMERS,), value_schema=CUSTOMERS.value_schema)
    with pytest.raises(DefineError, match="one value schema"):
        build(topics=(CUSTOMERS, TRANSACTIONS))
    with pytest.raises(DefineError, match="as Topic declarations or as names"):
        build(topics=(CUSTOMERS, "transactions"))
    with pytest.raises(DefineError, match=r"needs its key and value_schema.*output_topic"):
        build(topics=(FRAUD_ALERTS,))
    with pytest.raises(DefineError, match="a transform needs table"):
        Pipeline(name="p", version="v1", topics=(CUSTOMERS,), transform=_transform)
