"""Which stateful plans keep one state partition per input partition, and the refusal (with what
to do) when their inputs are not co-partitioned."""

from __future__ import annotations

import pytest

from pipelines.spend_hourly import PIPELINE as HOURLY
from pipelines.transactions_enriched import PIPELINE as ENRICHED
from streaming.run.copartition import CoPartitionError, Partitioning, state_partitions


def test_the_demo_plans_are_split_by_input_partition():
    assert ENRICHED.plan is not None and HOURLY.plan is not None
    split = state_partitions(ENRICHED.plan, {"transactions": 4, "customers": 4})
    assert split.partitioning is Partitioning.BY_INPUT_PARTITION and split.count == 4
    assert state_partitions(HOURLY.plan, {"transactions": 3}).count == 3


def test_inputs_with_different_partition_counts_are_refused_saying_what_to_do():
    assert ENRICHED.plan is not None
    with pytest.raises(CoPartitionError, match="different partition counts") as refused:
        state_partitions(ENRICHED.plan, {"transactions": 4, "customers": 2})
    assert "same number of partitions" in str(refused.value)


def test_a_stateful_function_is_split_only_when_its_state_key_holds_the_kafka_key():
    from pipelines.fraud_by_history import PIPELINE as HISTORY
    from pipelines.topics import TRANSACTIONS
    from streaming.define import stateful

    assert HISTORY.plan is not None
    assert state_partitions(HISTORY.plan, {"transactions": 4}).count == 4

    @stateful(by="currency", key="txn_id", emits="txn_id string")
    def per_currency(txn: dict, state: object) -> dict:
        return {"txn_id": txn["txn_id"]}

    plan = TRANSACTIONS.stream().process(per_currency)
    with pytest.raises(CoPartitionError, match=r"keeps its records by \['currency'\]"):
        state_partitions(plan, {"transactions": 4})


def test_a_refusal_names_the_rekeying_pipeline_the_user_can_write():
    from pipelines.topics import SEARCHES
    from streaming.define import Count, Pipeline, Stream, Topic

    plan = SEARCHES.stream().group_by("query", aggregations={"searches": Count()})
    with pytest.raises(CoPartitionError) as refused:
        state_partitions(plan, {"searches": 4})
    suggested = (
        "Pipeline(name='searches_by_query', version='v1', plan=SEARCHES.stream().rows(), "
        "publish=Stream(Topic('searches_by_query', key='query', value_schema=...), key='query'))"
    )
    assert suggested in str(refused.value)
    # what it names is a pipeline that can be declared
    by_query = Topic("searches_by_query", key="query", value_schema="query string, ts bigint")
    rekeyed = Pipeline(
        name="searches_by_query",
        version="v1",
        plan=SEARCHES.stream().rows(),
        publish=Stream(by_query, key="query"),
    )
    assert rekeyed.output_topics == ("searches_by_query",)
