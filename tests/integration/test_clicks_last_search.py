"""clicks_last_search (a stream-stream join within 10 minutes, latest match) against the embedded
broker and a real SparkSession, compared with a plain-Python evaluation at every commit and
across batch caps and SIGKILLs; exactly the late records are dead-lettered as ``late``."""

from __future__ import annotations

import pytest

from bench.support.producing import clickstream, send
from bench.support.reference import replay_stamped
from tests.integration.helpers import (
    check_commits,
    check_every_batching,
    kill_twice_mid_run,
    run_until_caught_up,
)
from tests.support.enrichment import clicks_last_search_reference

pytestmark = pytest.mark.integration

NAME = "clicks_last_search"
TOPICS = ["clicks", "searches"]


def test_clicks_equal_the_reference_at_every_commit_whatever_the_batching(spark, settings, broker):
    # One record per batch over the first 200 events; then, restarted, batches of up to 997
    # records, up to 250,000 (the whole log at once) and 997 from the start.
    send(settings, clickstream(200, seed=51))
    run_until_caught_up(spark, settings, NAME, version="cap1", max_offsets_per_trigger=1)
    send(settings, clickstream(1300, seed=52, start_ms=1_700_004_000_000))
    records = replay_stamped(settings.kafka.bootstrap_servers, TOPICS)
    final = check_every_batching(
        spark, settings, NAME, records, clicks_last_search_reference, "click_id", 20
    )
    assert any(r["search_query"] for r in final.values())
    assert any(r["search_query"] is None for r in final.values())


def test_sigkills_mid_run_then_resume_equal_the_reference(spark, settings, broker):
    send(settings, clickstream(3000, seed=53))
    first, second = kill_twice_mid_run(settings, NAME, max_offsets=100, batches=3)
    assert 3 <= first < second < 25
    run_until_caught_up(spark, settings, NAME, max_offsets_per_trigger=500)
    records = replay_stamped(settings.kafka.bootstrap_servers, TOPICS)
    check_commits(settings, NAME, "v1", records, clicks_last_search_reference, "click_id")
