"""transactions_enriched (an as-of stream-table join with durable state) against the embedded
broker and a real SparkSession: at every checked commit the table equals an independent plain-Python
evaluation of the definition on the offsets that commit records, whatever the batch sizes, and
after a SIGKILL mid-run; exactly the late records are dead-lettered as ``late``."""

from __future__ import annotations

from typing import Any

import pytest

from kappa.testing.enrichment import enriched_reference
from kappa.testing.producing import fraud_events, send
from kappa.testing.reference import replay_stamped
from streaming.delta.table_reader import commits, read_arrow
from streaming.run.deployment import Deployment
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
    send(settings, fraud_events(300, seed=22))
    records = replay_stamped(settings.kafka.bootstrap_servers, TOPICS)
    for version, cap in (("cap1", 1), ("cap97", 97), ("whole", 250_000)):
        run_until_caught_up(spark, settings, NAME, version=version, max_offsets_per_trigger=cap)
        _check_commits(settings, version, records, every=25)
    tables = [_rows(Deployment(NAME, v, settings.home).table_path) for v in ("cap1", "cap97")]
    assert tables[0] == tables[1] == _rows(Deployment(NAME, "whole", settings.home).table_path)
    assert _late_dead_letters(settings, "cap1") == _late_dead_letters(settings, "whole")


def test_sigkill_mid_run_then_resume_equals_the_reference(spark, settings, broker):
    send(settings, fraud_events(6000, seed=23))
    killed_at = kill_mid_run(settings, NAME, max_offsets=150, batches=4, timeout_s=240)
    assert 4 <= killed_at < 40

    run_until_caught_up(spark, settings, NAME, max_offsets_per_trigger=1000)
    records = replay_stamped(settings.kafka.bootstrap_servers, TOPICS)
    assert _check_commits(settings, "v1", records, every=5) > killed_at
    _, late = enriched_reference(records, _prefix_of_all(records))
    assert _late_dead_letters(settings, "v1") == late


def _prefix_of_all(records: list) -> dict[str, dict[int, int]]:
    ends: dict[str, dict[int, int]] = {}
    for r in records:
        parts = ends.setdefault(r.topic, {})
        parts[r.partition] = max(parts.get(r.partition, 0), r.offset + 1)
    return ends
