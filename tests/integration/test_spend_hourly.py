"""spend_hourly (1-hour tumbling windows, grace 10 minutes, composite key) against the embedded
broker and a real SparkSession, compared with a plain-Python evaluation at every commit; and a
v2 with 30-minute windows reprocessed beside it, compared at equal offsets and promoted."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from kappa.testing.enrichment import spend_hourly_reference
from kappa.testing.producing import fraud_events, send
from kappa.testing.reference import Stamped, replay_stamped
from pipelines.topics import TRANSACTIONS
from quality.rules import ComparisonPolicy
from streaming.define import Count, Max, Pipeline, Sum, Tumbling
from streaming.define.registry import get_pipeline, registry
from streaming.delta.table_reader import commits, read_arrow
from streaming.kafka.offsets import from_spark
from streaming.run.deployment import Deployment
from streaming.table_quality import run_table_suite
from streaming.versions.live_pointer import history, live_version, switch
from streaming.versions.promotion import promote
from tests.integration.helpers import kill_mid_run, run_until_caught_up

pytestmark = pytest.mark.integration

VALUES = ("txn_count", "total_amount", "max_amount")


def _check_commits(settings, records, version: str, every: int = 1) -> dict:  # type: ignore[no-untyped-def]
    """Compare the table at every ``every``-th commit (and the last) with the reference; check
    that exactly the late records are dead-lettered; return the last table."""
    deployment = Deployment("spend_hourly", version, settings.home)
    history = commits(deployment.table_path)
    assert [c.batch_id for c in history] == list(range(len(history)))
    chosen = history[::every]
    if chosen[-1] is not history[-1]:
        chosen.append(history[-1])
    for commit in chosen:
        expected, late = spend_hourly_reference(records, from_spark(commit.end_offsets))
        rows = read_arrow(deployment.table_path, commit.table_version).to_pylist()
        actual = {(r["customer_id"], r["window_start"]): r for r in rows}
        assert actual == expected, f"{version} batch {commit.batch_id}"
    dead = read_arrow(deployment.dead_letter_path).to_pylist()
    assert {(r["topic"], r["partition"], r["offset"]) for r in dead if r["error"] == "late"} == late
    assert late, "the input has late records"
    return actual


def test_windows_equal_the_reference_at_every_commit_whatever_the_batching(spark, settings, broker):
    # One record per batch over the first 300 events; then, restarted, batches of up to 997
    # records, up to 250,000 (the whole log at once) and 997 from the start.
    send(settings, fraud_events(300, seed=41, step_ms=10_000))
    run_until_caught_up(spark, settings, "spend_hourly", version="cap1", max_offsets_per_trigger=1)
    send(settings, fraud_events(1700, seed=44, step_ms=10_000, start_ms=1_700_003_000_000))
    records = replay_stamped(settings.kafka.bootstrap_servers, ["transactions"])
    finals = []
    for version, cap, every in (("cap1", 997, 20), ("cap997", 997, 1), ("whole", 250_000, 1)):
        run_until_caught_up(
            spark, settings, "spend_hourly", version=version, max_offsets_per_trigger=cap
        )
        finals.append(_check_commits(settings, records, version, every))
    assert finals[0] == finals[1] == finals[2] and len(finals[0]) > 40


def test_sigkills_mid_run_then_resume_equal_the_reference(spark, settings, broker):
    send(settings, fraud_events(3000, seed=43, step_ms=10_000))
    first = kill_mid_run(settings, "spend_hourly", max_offsets=100, batches=3, timeout_s=240)
    second = kill_mid_run(settings, "spend_hourly", max_offsets=100, batches=first + 3)
    assert 3 <= first < second < 20
    run_until_caught_up(spark, settings, "spend_hourly", max_offsets_per_trigger=500)
    records = replay_stamped(settings.kafka.bootstrap_servers, ["transactions"])
    _check_commits(settings, records, "v1")
    # The quality suite derived from the plan (composite key, schema) and its rules hold.
    pipeline = get_pipeline(settings.pipelines, "spend_hourly")
    _, suite = run_table_suite(settings, pipeline, spark=lambda: spark)
    assert suite.success, suite.failures
    assert suite.outcome("unique(customer_id, window_start)").element_count == suite.row_count > 40


def _half_hourly(v1: Pipeline) -> Pipeline:
    """v2: 30-minute windows, declared as an expected change of the key set and the values."""
    plan = (
        TRANSACTIONS.stream()
        .window(
            Tumbling(size_ms=1_800_000),
            by="customer_id",
            aggregations={
                "txn_count": Count(),
                "total_amount": Sum("amount"),
                "max_amount": Max("amount"),
            },
            grace=timedelta(minutes=10),
        )
        .with_columns(total_amount=pc.field("total_amount").cast(pa.decimal128(18, 2)))
        .select("txn_count", "total_amount", "max_amount")
    )
    policy = ComparisonPolicy(min_key_overlap=0.0, expected_changed_columns=frozenset(VALUES))
    return dataclasses.replace(v1, version="v2", plan=plan, comparison=policy)


def test_half_hourly_v2_is_compared_at_equal_offsets_and_promoted(
    spark, settings, broker, monkeypatch
):
    send(settings, fraud_events(600, seed=42, step_ms=10_000))
    v1 = get_pipeline(settings.pipelines, "spend_hourly")
    run_until_caught_up(spark, settings, v1)
    switch(settings.home, "spend_hourly", "v1", "first deployment")
    v2 = _half_hourly(v1)
    monkeypatch.setitem(registry(settings.pipelines), "spend_hourly", v2)
    run_until_caught_up(spark, settings, v2)

    promotion = promote(settings, "spend_hourly", "v2", wait_s=60)

    # The comparison shows exactly the difference the definitions make: plain Python over the
    # records both tables reflect (the same offsets), grouped by hour and by half hour.
    records = replay_stamped(settings.kafka.bootstrap_servers, ["transactions"])
    at = from_spark(promotion.switch.comparison["at_offsets"]["offsets"])
    assert at == {"transactions": {p: o + 1 for p, o in _last_offsets(records).items()}}
    hourly, late = spend_hourly_reference(records, at)
    half, _ = spend_hourly_reference(records, at, size_ms=1_800_000)
    assert late, "the input has late records; neither version counts them"
    shared = hourly.keys() & half.keys()
    result = promotion.comparison
    assert result.passed and result.key == "customer_id, window_start"
    cov = result.coverage
    assert (cov.old_keys, cov.new_keys, cov.in_both) == (len(hourly), len(half), len(shared))
    assert cov.old_duplicate_keys == cov.new_duplicate_keys == 0
    assert 0 < len(shared) < len(hourly) < len(half)
    for column in VALUES:
        same = sum(hourly[k][column] == half[k][column] for k in shared)
        assert result.column(column).matched == same, column
    assert live_version(settings.home, "spend_hourly") == "v2"
    assert history(settings.home, "spend_hourly")[-1].from_version == "v1"


def _last_offsets(records: list[Stamped]) -> dict[int, int]:
    last: dict[int, int] = {}
    for r in records:
        last[r.partition] = max(last.get(r.partition, -1), r.offset)
    return last
