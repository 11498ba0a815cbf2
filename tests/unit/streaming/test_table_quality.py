"""A table's quality spec derives from its declared columns: a pipeline gives only its rules."""

from __future__ import annotations

import dataclasses

import pytest

from pipelines.customer_spend import PIPELINE as CUSTOMER_SPEND
from pipelines.customers import PIPELINE as CUSTOMERS
from quality.rules import NotNull, TableSpec


def test_the_spec_has_the_tables_key_and_columns_and_the_declared_rules() -> None:
    spec = CUSTOMERS.quality_spec
    assert spec.key == "customer_id"
    assert spec.schema == {
        "customer_id": "string",
        "name": "string",
        "email": "string",
        "country": "string",
        "updated_at": "bigint",
        "partition": "int",
        "offset": "bigint",
    }
    assert spec.rules == CUSTOMERS.quality


def test_a_pipeline_without_rules_still_checks_its_key_and_schema() -> None:
    bare = dataclasses.replace(CUSTOMER_SPEND, quality=None).quality_spec
    assert bare.key == "customer_id" and bare.rules == ()
    assert bare.schema["total_amount"] == "decimal(18,2)"


def test_a_whole_spec_still_works_for_a_transform_and_says_to_give_only_the_rules() -> None:
    from pipelines.topics import CUSTOMERS as TOPIC
    from streaming.define import LatestPerKey, Pipeline

    spec = TableSpec("customers", key="customer_id", schema={"customer_id": "string"})
    with pytest.warns(DeprecationWarning, match="give only its rules"):
        pipeline = Pipeline(
            name="customers",
            version="v1",
            topics=(TOPIC,),
            transform=lambda records: records,
            table=LatestPerKey(key="customer_id"),
            table_schema=TOPIC.schema(),
            quality=spec,
        )
    assert pipeline.quality_spec is spec
    assert dataclasses.replace(CUSTOMERS, quality=NotNull("email")).quality_spec.rules == (
        NotNull("email"),
    )
