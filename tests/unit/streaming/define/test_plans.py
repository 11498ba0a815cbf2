"""The authoring API: topics and plans fail at definition with a message saying what to fix, the
table schema derives from the topics, and the fingerprint follows the plan."""

from __future__ import annotations

from datetime import timedelta

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from quality.rules import Between, TableSpec
from streaming.define import Count, LatestPerKey, Max, Pipeline, Sum, Topic, Tumbling
from streaming.errors import DefineError
from streaming.operators import GroupAggregate

ORDERS = Topic(
    "orders", key="order_id", value_schema="order_id string, user string, n bigint, ts bigint"
)
USERS = Topic(
    "users",
    key="user",
    value_schema="user string, tier string, at bigint",
    time="at",
    tombstones="delete",
)

PER_USER = {"orders": Count()}
MINUTE = Tumbling(timedelta(minutes=1))


def _plan(**columns: pc.Expression):  # type: ignore[no-untyped-def]
    plan = ORDERS.stream().join_as_of(
        USERS.table(), on="user", key="order_id", columns={"tier": "user_tier"}
    )
    return plan.with_columns(**columns) if columns else plan


def test_the_table_schema_derives_from_the_topics_and_expressions() -> None:
    plan = _plan(gold=pc.field("user_tier") == "gold")
    assert plan.table_schema() == pa.schema(
        [
            ("order_id", pa.string()),
            ("user", pa.string()),
            ("n", pa.int64()),
            ("ts", pa.int64()),
            ("user_tier", pa.string()),
            ("gold", pa.bool_()),
        ]
    )
    pipeline = Pipeline(name="orders_tiered", version="v1", plan=plan)
    assert pipeline.topics == ("orders", "users") and pipeline.table.key == "order_id"


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Topic("t", key="k", value_schema="k string", time="ts"), "not in the value"),
        (lambda: Topic("t", key="k", value_schema="k string, ts string", time="ts"), "integer"),
        (lambda: ORDERS.table(), "tombstones='delete'"),
        (lambda: _plan(bad=pc.field("nope") == 1), "does not fit"),
        (lambda: _plan(order_id=pc.field("user")), "part of the key"),
        (
            lambda: ORDERS.stream().join_as_of(
                USERS.table(), on="user", key="order_id", columns={"missing": "x"}
            ),
            "no column 'missing'",
        ),
        (lambda: Pipeline(name="p", version="v1"), "give a plan"),
        (
            lambda: Pipeline(
                name="p",
                version="v1",
                topics=("orders",),
                value_schema="order_id string",
                transform=lambda df: df,
                table=LatestPerKey(key="order_id"),
                table_schema=pa.schema([("order_id", pa.string())]),
                publish=Topic("p"),
            ),
            "publish needs a plan",
        ),
        (
            lambda: Pipeline(
                name="per_user_tier",
                version="v1",
                plan=ORDERS.stream().group_by("user", window=MINUTE, aggregations=PER_USER),
                publish=Topic("per_user_tier"),
            ).output_topic(),
            "composite key",
        ),
    ],
)
def test_bad_definitions_fail_with_what_to_fix(build, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(DefineError, match=message):
        build()


def test_the_fingerprint_follows_the_plan() -> None:
    one = Pipeline(name="p", version="v1", plan=_plan(gold=pc.field("user_tier") == "gold"))
    same = Pipeline(name="p", version="v1", plan=_plan(gold=pc.field("user_tier") == "gold"))
    other = Pipeline(name="p", version="v1", plan=_plan(gold=pc.field("user_tier") == "GOLD"))
    assert one.fingerprint == same.fingerprint != other.fingerprint


def test_a_published_table_is_a_topic_with_the_table_schema() -> None:
    pipeline = Pipeline(name="tiered", version="v1", plan=_plan(), publish=Topic("tiered"))
    topic = pipeline.output_topic()
    assert topic.changelog and topic.key == "order_id"
    assert topic.schema() == pipeline.table_schema


def test_a_plans_quality_spec_derives_its_key_and_schema_and_takes_the_declared_rules() -> None:
    rule = Between("orders", min_value=1)
    plan = ORDERS.stream().group_by("user", window=MINUTE, aggregations=PER_USER)
    spec = Pipeline(name="per_user", version="v1", plan=plan, quality=(rule,)).quality_spec
    assert spec.keys == ("user", "window_start") and spec.rules == (rule,)
    assert dict(spec.schema) == dict(
        user="string", window_start="bigint", window_end="bigint", orders="bigint"
    )
    bare = Pipeline(name="tiered", version="v1", plan=_plan()).quality_spec
    assert bare.key == "order_id" and bare.rules == ()


def test_a_plan_refuses_a_whole_quality_spec_and_a_rule_on_a_missing_column() -> None:
    spec = TableSpec("tiered", key="order_id", schema={"order_id": "string"})
    with pytest.raises(DefineError, match="give only the rules"):
        Pipeline(name="tiered", version="v1", plan=_plan(), quality=spec)
    with pytest.raises(DefineError, match="names a column not in the schema"):
        Pipeline(name="tiered", version="v1", plan=_plan(), quality=(Between("nope", 0),))


def test_a_table_input_keeps_where_each_row_was_read_when_asked() -> None:
    plain = USERS.table().rows()
    placed = USERS.table().rows(position=("partition", "offset"))
    assert placed.table_schema() == plain.table_schema().append(
        pa.field("partition", pa.int32())
    ).append(pa.field("offset", pa.int64()))
    assert Pipeline(name="users", version="v1", plan=placed).table.keys == ("user",)


def test_an_unwindowed_group_by_aggregates_every_record_per_group() -> None:
    totals = {"orders": Count(), "total": Sum("n"), "last": Max("ts")}
    plan = ORDERS.stream().group_by("user", aggregations=totals)
    assert isinstance(plan.operator, GroupAggregate) and plan.key == ("user",)
    assert plan.table_schema() == pa.schema(
        [("user", pa.string()), ("orders", pa.int64()), ("total", pa.int64()), ("last", pa.int64())]
    )
    windowed = ORDERS.stream().group_by("user", window=MINUTE, aggregations=totals)
    assert windowed.key == ("user", "window_start")


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: USERS.table().rows(position=("p",)), "names two columns"),
        (lambda: USERS.table().rows(position=("tier", "offset")), "already columns"),
        (lambda: ORDERS.stream().group_by(aggregations=PER_USER), "grouping columns"),
        (lambda: ORDERS.stream().group_by("nope", aggregations=PER_USER), "nope"),
        (
            lambda: ORDERS.stream().group_by(
                "user", aggregations=PER_USER, grace=timedelta(minutes=1)
            ),
            "grace apply to windows",
        ),
        (
            lambda: ORDERS.stream().group_by("user", aggregations=PER_USER, emit="final"),
            "emit='final' apply to windows",
        ),
        (
            lambda: ORDERS.stream().group_by(
                "user", window=MINUTE, aggregations=PER_USER, emit="once"
            ),
            "emit is 'updates' or 'final'",
        ),
    ],
)
def test_bad_inputs_and_groupings_fail_with_what_to_fix(build, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(DefineError, match=message):
        build()
