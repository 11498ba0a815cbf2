"""transactions_enriched (an as-of stream-table join with durable state) against the embedded
broker and a real SparkSession: at every checked commit the table equals an independent plain-Python
evaluation of the definition on the offsets that commit records, whatever the batch sizes, and
after a SIGKILL mid-run; exactly the late records are dead-lettered as ``late``. A v2 with a
changed rule is reprocessed beside v1, compared at equal offsets and promoted."""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from kappa.testing.enrichment import enriched_reference
from kappa.testing.producing import fraud_events, send
from kappa.testing.reference import replay_stamped
from pipelines.topics import CUSTOMERS, TRANSACTIONS
from quality.rules import ComparisonPolicy
from streaming.define import Pipeline
from streaming.define.registry import get_pipeline, registry
from streaming.delta.table_reader import commits, read_arrow
from streaming.kafka.offsets import from_spark
from streaming.run.deployment import Deployment
from streaming.versions.live_pointer import live_version, switch
from streaming.versions.promotion import compare_versions, promote
from tests.integration.helpers import kill_mid_run, run_until_caught_up

pytestmark = pytest.mark.integration

NAME = "transactions_enriched"
TOPICS = ["customers", "transactions"]


def _rows(path: Any, version: int | None = None) -> dict[str, dict[str, Any]]:
    return {row["txn_id"]: row for row in read_arrow(path, version).to_pylist()}


def _prefix(end_offsets: dict) -> dict[str, dict[int, int]]:
    return {t: {int(p): int(o) for p, o in parts.items()} for t, parts in end_offsets.items()}


def _late_dead_letters(settings: Any, version: str) -> set[tuple[str, int, int]]:
    path = Deployment(NAME, version, settings.home).dead_letter_path
    if not path.exists():
        return set()
    rows = read_arrow(path).to_pylist()
    return {(r["topic"], r["partition"], r["offset"]) for r in rows if r["error"] == "late"}


def _check_commits(settings: Any, version: str, records: list, every: int = 1) -> int:
    """Compare the table at every ``every``-th commit (and the last) with the reference."""
    path = Deployment(NAME, version, settings.home).table_path
    history = commits(path)
    assert [c.batch_id for c in history] == list(range(len(history)))
    chosen = history[::every] if every > 1 else history
    if chosen[-1] is not history[-1]:
        chosen = [*chosen, history[-1]]
    for commit in chosen:
        expected, _ = enriched_reference(records, _prefix(commit.end_offsets))
        actual = _rows(path, commit.table_version)
        assert actual == expected, f"batch {commit.batch_id}: {len(actual)} vs {len(expected)} rows"
    return len(history)


def test_equals_the_reference_at_every_commit_and_dead_letters_exactly_the_late(
    spark, settings, broker
):
    send(settings, fraud_events(2500, seed=21))
    run_until_caught_up(spark, settings, NAME, max_offsets_per_trigger=400)
    records = replay_stamped(settings.kafka.bootstrap_servers, TOPICS)
    assert _check_commits(settings, "v1", records) >= 5
    expected, late = enriched_reference(records, _prefix_of_all(records))
    assert _rows(Deployment(NAME, "v1", settings.home).table_path) == expected
    assert len(late) > 10 and _late_dead_letters(settings, "v1") == late
    assert 0 < sum(r["suspicious"] for r in expected.values()) < len(expected)
    assert any(r["customer_country"] is None for r in expected.values())


def test_batch_caps_give_the_definition_at_equal_offsets(spark, settings, broker):
    # One record per batch over the first 300 events; then, restarted, batches of up to 997
    # records, up to 250,000 (the whole log at once) and 997 from the start.
    send(settings, fraud_events(300, seed=22))
    run_until_caught_up(spark, settings, NAME, version="cap1", max_offsets_per_trigger=1)
    send(settings, fraud_events(1200, seed=25, start_ms=1_700_000_300_000))
    records = replay_stamped(settings.kafka.bootstrap_servers, TOPICS)
    for version, cap in (("cap1", 997), ("cap997", 997), ("whole", 250_000)):
        run_until_caught_up(spark, settings, NAME, version=version, max_offsets_per_trigger=cap)
        _check_commits(settings, version, records, every=25)
    tables = [_rows(Deployment(NAME, v, settings.home).table_path) for v in ("cap1", "cap997")]
    assert tables[0] == tables[1] == _rows(Deployment(NAME, "whole", settings.home).table_path)
    late = _late_dead_letters(settings, "cap1")
    assert late and late == _late_dead_letters(settings, "cap997")
    assert late == _late_dead_letters(settings, "whole")


def test_sigkills_mid_run_then_resume_equal_the_reference(spark, settings, broker):
    send(settings, fraud_events(6000, seed=23))
    first = kill_mid_run(settings, NAME, max_offsets=150, batches=4, timeout_s=240)
    second = kill_mid_run(settings, NAME, max_offsets=150, batches=first + 3)
    assert 4 <= first < second < 40

    run_until_caught_up(spark, settings, NAME, max_offsets_per_trigger=1000)
    records = replay_stamped(settings.kafka.bootstrap_servers, TOPICS)
    assert _check_commits(settings, "v1", records, every=5) > second
    _, late = enriched_reference(records, _prefix_of_all(records))
    assert _late_dead_letters(settings, "v1") == late


def _prefix_of_all(records: list) -> dict[str, dict[int, int]]:
    ends: dict[str, dict[int, int]] = {}
    for r in records:
        parts = ends.setdefault(r.topic, {})
        parts[r.partition] = max(parts.get(r.partition, 0), r.offset + 1)
    return ends


LARGE = Decimal(100)


def _large_only(v1: Pipeline) -> Pipeline:
    """v2's rule: suspicious only from 100 up (the same join), declared as a change of
    ``suspicious``."""
    cc, amount = pc.field("customer_country"), pc.field("amount")
    foreign = pc.if_else(cc.is_null(), True, cc != pc.field("country"))
    plan = (
        TRANSACTIONS.stream()
        .join_as_of(
            CUSTOMERS.table(),
            on="customer_id",
            key="txn_id",
            columns={"country": "customer_country", "name": "customer_name"},
            how="left",
        )
        .with_columns(suspicious=foreign & (amount >= pa.scalar(LARGE, pa.decimal128(18, 2))))
    )
    policy = ComparisonPolicy(expected_changed_columns=frozenset({"suspicious"}))
    return dataclasses.replace(v1, version="v2", plan=plan, comparison=policy)


def test_a_changed_rule_is_compared_at_equal_offsets_and_promoted(
    spark, settings, broker, monkeypatch
):
    send(settings, fraud_events(600, seed=24))
    v1 = get_pipeline(settings.pipelines, NAME)
    run_until_caught_up(spark, settings, v1)
    switch(settings.home, NAME, "v1", "first deployment")
    # The same definition under another version and other batch sizes compares 100% equal.
    run_until_caught_up(spark, settings, v1, version="same", max_offsets_per_trigger=97)
    same = compare_versions(settings, NAME, "v1", "same")
    assert same.passed and same.mismatches == ()
    assert all(c.matched == c.compared == same.coverage.in_both for c in same.columns)
    assert same.coverage.only_old == same.coverage.only_new == 0

    v2 = _large_only(v1)
    monkeypatch.setitem(registry(settings.pipelines), NAME, v2)
    run_until_caught_up(spark, settings, v2)
    promotion = promote(settings, NAME, "v2", wait_s=60)

    # Exactly the intended difference: the suspicious transactions under 100, by the reference
    # at the offsets the comparison used.
    records = replay_stamped(settings.kafka.bootstrap_servers, TOPICS)
    at = from_spark(promotion.switch.comparison["at_offsets"]["offsets"])
    assert at == _prefix_of_all(records)
    expected, _ = enriched_reference(records, at)
    flipped = {t for t, r in expected.items() if r["suspicious"] and r["amount"] < LARGE}
    result = promotion.comparison
    assert result.passed and result.coverage.in_both == len(expected) > 0
    assert result.coverage.only_old == result.coverage.only_new == 0
    changed = {c.column: c.mismatched for c in result.columns if c.mismatched}
    assert changed == {"suspicious": len(flipped)} and flipped
    assert {m.key for m in result.mismatches} <= flipped
    assert live_version(settings.home, NAME) == "v2"
