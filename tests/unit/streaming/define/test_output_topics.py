"""Output topics are declared as inputs are: a Topic whose key and value schema derive from the
table; given, they must be the table's; a topic without them cannot be read."""

from __future__ import annotations

from datetime import timedelta

import pytest

from streaming.define import Count, Pipeline, Topic, Tumbling
from streaming.errors import DefineError

CHANGES = Topic(
    "changes",
    key="id",
    value_schema="id string, name string, n bigint",
    tombstones="delete",
)
TABLE_DDL = "id string, name string, n bigint"


def _publishing(topic: Topic) -> Pipeline:
    return Pipeline(name="names", version="v1", plan=CHANGES.table().rows(), publish=topic)


def test_an_output_topic_takes_its_key_and_value_schema_from_the_table() -> None:
    pipeline = _publishing(Topic("names"))
    assert pipeline.publish == "names"
    topic = pipeline.output_topic()
    assert (topic.name, topic.key, topic.value_schema) == ("names", "id", TABLE_DDL)
    assert topic.changelog and topic.schema() == pipeline.table_schema
    # another pipeline reads it as a table
    plan = topic.table().rows()
    assert plan.topics == ("names",) and plan.key == ("id",)


def test_an_output_topic_declaring_the_tables_key_and_columns_is_accepted() -> None:
    same = Topic("names", key="id", value_schema="n bigint, id string, name string")
    assert _publishing(same).output_topic() == _publishing(Topic("names")).output_topic()


@pytest.mark.parametrize(
    ("topic", "says"),
    [
        (Topic("names", key="name"), "declares key 'name', but the table's key is id"),
        (
            Topic("names", value_schema="id string, name string, n int"),
            "n is int, the table's is bigint",
        ),
        (
            Topic("names", value_schema="id string, name string"),
            "the table's column n is missing",
        ),
        (
            Topic("names", value_schema="id string, name string, n bigint, extra string"),
            "extra is not a column of the table",
        ),
        (
            Topic("names", key="id", value_schema="id string, ts bigint", time="ts"),
            "declares an event time",
        ),
    ],
)
def test_an_output_topic_that_is_not_the_table_fails_saying_what_differs(topic, says) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(DefineError, match=says):
        _publishing(topic)


def test_a_composite_key_is_published_as_json_and_cannot_be_declared_as_a_column() -> None:
    plan = CHANGES.stream().group_by(
        "name", window=Tumbling(timedelta(minutes=1)), aggregations={"count": Count()}
    )
    assert Pipeline(name="counts", version="v1", plan=plan, publish=Topic("counts")).publish
    with pytest.raises(DefineError, match=r"\(name, window_start\), published as JSON"):
        Pipeline(name="counts", version="v1", plan=plan, publish=Topic("counts", key="name"))


@pytest.mark.parametrize(
    "read",
    [
        lambda topic: topic.stream(),
        lambda topic: topic.table(),
        lambda topic: topic.schema(),
    ],
)
def test_a_topic_without_key_and_value_schema_cannot_be_read(read) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(DefineError, match=r"needs its key and value_schema.*output_topic\(\)"):
        read(Topic("names", tombstones="delete"))
    with pytest.raises(DefineError, match="needs its value_schema"):
        read(Topic("names", key="id", tombstones="delete"))


def test_publish_takes_a_topic_and_output_topic_needs_one() -> None:
    with pytest.raises(DefineError, match="publish takes a Topic"):
        _publishing(42)  # type: ignore[arg-type]
    unpublished = Pipeline(name="names", version="v1", plan=CHANGES.table().rows())
    with pytest.raises(DefineError, match=r"publishes no topic: set publish=Topic"):
        unpublished.output_topic()
