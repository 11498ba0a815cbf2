"""clicks_enriched (a stream-stream join within 10 minutes, latest match) against the embedded
broker and a real SparkSession, compared with a plain-Python evaluation at every commit and
across batch caps and SIGKILLs; exactly the late records are dead-lettered as ``late``."""

from __future__ import annotations

from typing import Any

import pytest

from kappa.testing.enrichment import clicks_reference
from kappa.testing.producing import clickstream, send
from kappa.testing.reference import Stamped, replay_stamped
from streaming.delta.table_reader import commits, read_arrow
from streaming.kafka.offsets import from_spark
from streaming.run.deployment import Deployment
from streaming.settings import Settings
from tests.integration.helpers import kill_mid_run, run_until_caught_up

pytestmark = pytest.mark.integration

NAME = "clicks_enriched"
TOPICS = ["clicks", "searches"]


def _check_commits(
    settings: Settings, records: list[Stamped], version: str, every: int = 1
) -> dict[str, dict[str, Any]]:
    """Compare the table at every ``every``-th commit (and the last) with the reference; check
    that exactly the late records are dead-lettered; return the last table."""
    deployment = Deployment(NAME, version, settings.home)
    history = commits(deployment.table_path)
    assert [c.batch_id for c in history] == list(range(len(history)))
    chosen = history[::every]
    if chosen[-1] is not history[-1]:
        chosen.append(history[-1])
    for commit in chosen:
        expected, late = clicks_reference(records, from_spark(commit.end_offsets))
        rows = read_arrow(deployment.table_path, commit.table_version).to_pylist()
        actual = {r["click_id"]: r for r in rows}
        assert actual == expected, f"{version} batch {commit.batch_id}"
    dead = read_arrow(deployment.dead_letter_path).to_pylist()
    assert {(r["topic"], r["partition"], r["offset"]) for r in dead if r["error"] == "late"} == late
    assert late, "the input has late records"
    return actual


def test_clicks_equal_the_reference_at_every_commit_whatever_the_batching(spark, settings, broker):
    # One record per batch over the first 200 events; then, restarted, batches of up to 997
    # records, up to 250,000 (the whole log at once) and 997 from the start.
    send(settings, clickstream(200, seed=51))
    run_until_caught_up(spark, settings, NAME, version="cap1", max_offsets_per_trigger=1)
    send(settings, clickstream(1300, seed=52, start_ms=1_700_004_000_000))
    records = replay_stamped(settings.kafka.bootstrap_servers, TOPICS)
    finals = []
    for version, cap, every in (("cap1", 997, 20), ("cap997", 997, 1), ("whole", 250_000, 1)):
        run_until_caught_up(spark, settings, NAME, version=version, max_offsets_per_trigger=cap)
        finals.append(_check_commits(settings, records, version, every))
    assert finals[0] == finals[1] == finals[2]
    assert any(r["search_query"] for r in finals[0].values())
    assert any(r["search_query"] is None for r in finals[0].values())


def test_sigkills_mid_run_then_resume_equal_the_reference(spark, settings, broker):
    send(settings, clickstream(3000, seed=53))
    first = kill_mid_run(settings, NAME, max_offsets=100, batches=3, timeout_s=240)
    second = kill_mid_run(settings, NAME, max_offsets=100, batches=first + 3)
    assert 3 <= first < second < 25
    run_until_caught_up(spark, settings, NAME, max_offsets_per_trigger=500)
    records = replay_stamped(settings.kafka.bootstrap_servers, TOPICS)
    _check_commits(settings, records, "v1")
