"""Stream outputs: a stream's rows sent on to a topic keyed by any column, or routed among topics
by a column's value; what can be sent is checked when the pipeline is declared, and a batch's new
rows become the records a reader of the topic decodes."""

from __future__ import annotations

import dataclasses
import json

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from streaming.define import Count, Pipeline, Stream, Topic
from streaming.errors import DefineError
from streaming.operators import DELETE, Batch
from streaming.run.stream_records import stream_records

ORDERS = Topic(
    "orders",
    key="customer_id",
    value_schema="order_id string, customer_id string, region string, amount bigint, ts bigint",
    time="ts",
)
BY_ORDER = Topic(
    "orders_by_id", key="order_id", value_schema="order_id string, amount bigint", time=None
)
EU = Topic("orders_eu", key="order_id")
US = Topic("orders_us", key="order_id")


def _batch(*rows: tuple[str, str, str | None, int], partition: int = 0, at: int = 0) -> Batch:
    table = pa.table(
        {
            "order_id": [r[0] for r in rows],
            "customer_id": [r[1] for r in rows],
            "region": pa.array([r[2] for r in rows], pa.string()),
            "amount": pa.array([r[3] for r in rows], pa.int64()),
            "ts": pa.array([1000 * i for i in range(len(rows))], pa.int64()),
            "_partition": pa.array([partition] * len(rows), pa.int32()),
            "_offset": pa.array(range(at, at + len(rows)), pa.int64()),
            "_timestamp": pa.array([0] * len(rows), pa.int64()),
        }
    )
    return Batch(records={"orders": table}, ends={"orders": {partition: at + len(rows)}})


def _changes(pipeline: Pipeline, batch: Batch) -> pa.Table:
    plan = pipeline.plan
    assert plan is not None
    step = plan.operator.step(plan.operator.initial_state(), batch)
    return plan.finish(step.changes, pipeline.table_schema)


def test_a_streams_rows_go_to_a_topic_keyed_by_a_column_with_the_columns_it_declares() -> None:
    plan = ORDERS.stream().rows().where(pc.field("amount") >= 100)
    pipeline = Pipeline(
        name="big", version="v1", plan=plan, publish=Stream(BY_ORDER, key="order_id")
    )
    assert pipeline.publish is None and pipeline.output_topics == ("orders_by_id",)
    assert pipeline.table.keys == ("partition", "offset")
    batch = _batch(("o1", "c1", "EU", 50), ("o2", "c1", "US", 150), ("o3", "c2", None, 100))
    changes = _changes(pipeline, batch)
    # a rejected row is left out of the table, not deleted from it
    assert changes.num_rows == 2 and not any(changes.column(DELETE).to_pylist())
    assert pipeline.stream_output is not None
    records = list(stream_records(changes, pipeline.stream_output))
    assert [(k, json.loads(v or b""), t) for k, v, t in records] == [
        ("o2", {"order_id": "o2", "amount": 150}, "orders_by_id"),
        ("o3", {"order_id": "o3", "amount": 100}, "orders_by_id"),
    ]


def test_rows_are_routed_by_a_columns_value_and_a_row_without_a_route_is_not_sent() -> None:
    stream = Stream({"EU": EU, "US": US}, key="order_id", by="region")
    pipeline = Pipeline(name="routed", version="v1", plan=ORDERS.stream().rows(), publish=stream)
    assert pipeline.output_topics == ("orders_eu", "orders_us")
    batch = _batch(("o1", "c1", "EU", 1), ("o2", "c1", "US", 2), ("o3", "c2", None, 3))
    assert pipeline.stream_output is not None
    records = stream_records(_changes(pipeline, batch), pipeline.stream_output)
    sent = [(key, topic, json.loads(value or b"")["region"]) for key, value, topic in records]
    assert sent == [("o1", "orders_eu", "EU"), ("o2", "orders_us", "US")]


def test_a_stream_output_survives_replacing_a_field() -> None:
    stream = Stream(BY_ORDER, key="order_id")
    pipeline = Pipeline(name="big", version="v1", plan=ORDERS.stream().rows(), publish=stream)
    v2 = dataclasses.replace(pipeline, version="v2")
    assert v2.stream == stream and v2.stream_output == pipeline.stream_output
    with pytest.raises(DefineError, match="either the table"):
        dataclasses.replace(pipeline, publish=Topic("big"))


def test_a_replayed_record_adds_no_row() -> None:
    plan = ORDERS.stream().rows()
    state = plan.operator.initial_state()
    first = plan.operator.step(state, _batch(("o1", "c1", "EU", 1)))
    again = plan.operator.step(first.state, _batch(("o1", "c1", "EU", 1)))
    assert first.changes.num_rows == 1 and again.changes.num_rows == 0


def test_a_stream_output_that_cannot_work_is_refused_saying_what_to_do() -> None:
    rows = ORDERS.stream().rows()
    counts = ORDERS.stream().group_by("customer_id", aggregations={"n": Count()})
    refusals = {
        "only ever added": (counts, Stream(BY_ORDER, key="customer_id")),
        "key='nope' is not a column": (rows, Stream(BY_ORDER, key="nope")),
        "declares key 'order_id'": (rows, Stream(BY_ORDER, key="customer_id")),
        "maps values to topics": (rows, Stream(BY_ORDER, key="order_id", by="region")),
        "amount is string": (
            rows,
            Stream(Topic("t", key="order_id", value_schema="amount string"), key="order_id"),
        ),
    }
    for message, (plan, stream) in refusals.items():
        with pytest.raises(DefineError, match=message):
            Pipeline(name="bad", version="v1", plan=plan, publish=stream)


def test_a_topic_written_as_a_stream_is_read_back_as_a_stream() -> None:
    counts = BY_ORDER.stream().group_by("order_id", aggregations={"n": Count()})
    assert counts.topics == ("orders_by_id",) and counts.key == ("order_id",)
