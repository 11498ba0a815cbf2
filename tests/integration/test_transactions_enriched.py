"""transactions_enriched (an as-of stream-table join with durable state) against the embedded
broker and a real SparkSession: at every checked commit the table equals an independent plain-Python
evaluation of the definition on the offsets that commit records, whatever the batch sizes, and
after a SIGKILL mid-run; exactly the late records are dead-lettered as ``late``. A v2 with a
changed rule is reprocessed beside v1, compared at equal offsets and promoted."""

from __future__ import annotations

import dataclasses
import json
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from bench.support.producing import fraud_events, send
from bench.support.reference import changelog_table, log_ends, replay_stamped
from pipelines.transactions_enriched import SUSPICIOUS
from quality.rules import ComparisonPolicy
from streaming.define import Pipeline
from streaming.define.registry import get_pipeline, registry
from streaming.delta.table_reader import read_arrow
from streaming.deployment import Deployment
from streaming.kafka.offsets import from_spark
from streaming.versions.live_pointer import live_version, switch
from streaming.versions.promotion import compare_versions, promote
from tests.integration.helpers import (
    check_commits,
    kill_twice_mid_run,
    late_dead_letters,
    published_once,
    replay_published,
    run_until_caught_up,
)
from tests.support.enrichment import enriched_reference

pytestmark = pytest.mark.integration

NAME = "transactions_enriched"
TOPICS = ["customers", "transactions"]


def _rows(path: Any, version: int | None = None) -> dict[str, dict[str, Any]]:
    return {row["txn_id"]: row for row in read_arrow(path, version).to_pylist()}


def _check_commits(settings: Any, version: str, records: list, every: int = 1) -> int:
    """How many commits the table has, each ``every``-th and the last equal to the reference."""
    return check_commits(settings, NAME, version, records, enriched_reference, "txn_id", every)[0]


def test_equals_the_reference_at_every_commit_and_dead_letters_exactly_the_late(
    spark, settings, broker
):
    send(settings, fraud_events(2500, seed=21))
    run_until_caught_up(spark, settings, NAME, max_offsets_per_trigger=400)
    records = replay_stamped(settings.kafka.bootstrap_servers, TOPICS)
    assert _check_commits(settings, "v1", records) >= 5
    expected, late = enriched_reference(records, log_ends(records))
    assert _rows(Deployment(NAME, "v1", settings.home).table_path) == expected
    assert len(late) > 10 and late_dead_letters(settings, NAME, "v1") == late
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
    late = late_dead_letters(settings, NAME, "cap1")
    assert late and late == late_dead_letters(settings, NAME, "cap997")
    assert late == late_dead_letters(settings, NAME, "whole")


def test_sigkills_mid_run_then_resume_equal_the_reference(spark, settings, broker):
    # Each kill lands between a batch's publication to the topic and the table's commit of it.
    send(settings, fraud_events(6000, seed=23))
    first, second = kill_twice_mid_run(
        settings, NAME, max_offsets=150, batches=4, publishing_to=NAME
    )
    assert 4 <= first < second < 40

    run_until_caught_up(spark, settings, NAME, max_offsets_per_trigger=1000)
    records = replay_stamped(settings.kafka.bootstrap_servers, TOPICS)
    commits = _check_commits(settings, "v1", records, every=5)
    assert commits > second
    _, late = enriched_reference(records, log_ends(records))
    assert late_dead_letters(settings, NAME, "v1") == late

    # Read committed, the topic holds each batch once, the killed ones too, and is the table.
    published = replay_published(settings, NAME)
    batches = published_once(published, f"{NAME}__v1")
    assert {first, second} <= set(batches) <= set(range(commits))
    table = _rows(Deployment(NAME, "v1", settings.home).table_path)
    assert changelog_table(published) == json.loads(json.dumps(table, default=float))


LARGE = Decimal(100)


def _large_only(v1: Pipeline) -> Pipeline:
    """v2's rule: suspicious only from 100 up (the same join), declared as a change of
    ``suspicious``."""
    large = pc.field("amount") >= pa.scalar(LARGE, pa.decimal128(18, 2))
    plan = v1.plan.with_columns(suspicious=SUSPICIOUS & large)  # type: ignore[union-attr]
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
    assert at == log_ends(records)
    expected, _ = enriched_reference(records, at)
    flipped = {t for t, r in expected.items() if r["suspicious"] and r["amount"] < LARGE}
    result = promotion.comparison
    assert result.passed and result.coverage.in_both == len(expected) > 0
    assert result.coverage.only_old == result.coverage.only_new == 0
    changed = {c.column: c.mismatched for c in result.columns if c.mismatched}
    assert changed == {"suspicious": len(flipped)} and flipped
    assert {m.key for m in result.mismatches} <= flipped
    assert live_version(settings.home, NAME) == "v2"
