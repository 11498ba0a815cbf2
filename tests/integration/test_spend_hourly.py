"""spend_hourly (1-hour tumbling windows, grace 10 minutes, composite key) against the embedded
broker and a real SparkSession, compared with a plain-Python evaluation at every commit; and a
v2 with 30-minute windows reprocessed beside it, compared at equal offsets and promoted."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any

import pytest

from bench.support.producing import fraud_events, send
from bench.support.reference import log_ends, replay_stamped
from pipelines.spend_hourly import spend_per_window
from quality.rules import ComparisonPolicy
from streaming.define import Pipeline
from streaming.define.registry import get_pipeline, registry
from streaming.delta.table_reader import commits
from streaming.deployment import Deployment
from streaming.deployment.record import WHOLE_STATE
from streaming.kafka.offsets import from_spark
from streaming.table_quality import run_table_suite
from streaming.versions.live_pointer import history, live_version, switch
from streaming.versions.promotion import promote
from tests.integration.helpers import (
    check_commits,
    check_every_batching,
    kill_twice_mid_run,
    run_until_caught_up,
)
from tests.support.enrichment import spend_hourly_reference

pytestmark = pytest.mark.integration

NAME = "spend_hourly"
KEY = ("customer_id", "window_start")
VALUES = ("txn_count", "total_amount", "max_amount")


def test_windows_equal_the_reference_at_every_commit_whatever_the_batching(spark, settings, broker):
    # One record per batch over the first 300 events; then, restarted, batches of up to 997
    # records, up to 250,000 (the whole log at once) and 997 from the start.
    send(settings, fraud_events(300, seed=41, step_ms=10_000))
    run_until_caught_up(spark, settings, NAME, version="cap1", max_offsets_per_trigger=1)
    send(settings, fraud_events(1700, seed=44, step_ms=10_000, start_ms=1_700_003_000_000))
    records = replay_stamped(settings.kafka.bootstrap_servers, ["transactions"])
    final = check_every_batching(spark, settings, NAME, records, spend_hourly_reference, KEY, 20)
    assert len(final) > 40


class _OnePartition:
    """The window operator declaring no partitioning (``partitioned_by`` None): what the
    platform makes of an operator it cannot relate to its inputs' keys (one state partition,
    the whole batch)."""

    def __init__(self, operator: Any) -> None:
        self.operator = operator

    @property
    def partitioned_by(self) -> None:
        return None

    def __getattr__(self, name: str) -> Any:
        if name == "operator" or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.operator, name)


def test_a_plan_with_one_whole_state_equals_the_reference(spark, settings, broker):
    send(settings, fraud_events(1500, seed=45, step_ms=10_000))
    v1 = get_pipeline(settings.pipelines, NAME)
    plan = dataclasses.replace(v1.plan, operator=_OnePartition(v1.plan.operator))
    whole = dataclasses.replace(v1, version="whole", plan=plan)
    run_until_caught_up(spark, settings, whole, max_offsets_per_trigger=250)
    records = replay_stamped(settings.kafka.bootstrap_servers, ["transactions"])
    count, final = check_commits(settings, NAME, "whole", records, spend_hourly_reference, KEY)
    assert count >= 4 and len(final) > 40
    history = commits(Deployment(NAME, "whole", settings.home).table_path)
    assert all(set(c.state_versions or {}) <= {WHOLE_STATE} for c in history)
    assert history[-1].state_versions == {WHOLE_STATE: history[-1].batch_id}


def test_sigkills_mid_run_then_resume_equal_the_reference(spark, settings, broker):
    send(settings, fraud_events(3000, seed=43, step_ms=10_000))
    first, second = kill_twice_mid_run(settings, NAME, max_offsets=100, batches=3)
    assert 3 <= first < second < 20
    run_until_caught_up(spark, settings, NAME, max_offsets_per_trigger=500)
    records = replay_stamped(settings.kafka.bootstrap_servers, ["transactions"])
    check_commits(settings, NAME, "v1", records, spend_hourly_reference, KEY)
    # The quality suite derived from the plan (composite key, schema) and its rules hold.
    pipeline = get_pipeline(settings.pipelines, NAME)
    _, suite = run_table_suite(settings, pipeline, spark=lambda: spark)
    assert suite.success, suite.failures
    assert suite.outcome("unique(customer_id, window_start)").element_count == suite.row_count > 40


def _half_hourly(v1: Pipeline) -> Pipeline:
    """v2: 30-minute windows, declared as an expected change of the key set and the values."""
    policy = ComparisonPolicy(min_key_overlap=0.0, expected_changed_columns=frozenset(VALUES))
    plan = spend_per_window(timedelta(minutes=30))
    return dataclasses.replace(v1, version="v2", plan=plan, comparison=policy)


def test_half_hourly_v2_is_compared_at_equal_offsets_and_promoted(
    spark, settings, broker, monkeypatch
):
    send(settings, fraud_events(600, seed=42, step_ms=10_000))
    v1 = get_pipeline(settings.pipelines, NAME)
    run_until_caught_up(spark, settings, v1)
    switch(settings.home, NAME, "v1", "first deployment")
    v2 = _half_hourly(v1)
    monkeypatch.setitem(registry(settings.pipelines), NAME, v2)
    run_until_caught_up(spark, settings, v2)

    promotion = promote(settings, NAME, "v2", wait_s=60)

    # The comparison shows exactly the difference the definitions make: plain Python over the
    # records both tables reflect (the same offsets), grouped by hour and by half hour.
    records = replay_stamped(settings.kafka.bootstrap_servers, ["transactions"])
    at = from_spark(promotion.switch.comparison["at_offsets"]["offsets"])
    assert at == log_ends(records)
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
    assert live_version(settings.home, NAME) == "v2"
    assert history(settings.home, NAME)[-1].from_version == "v1"
