"""clicks_enriched (the seed's click-stream enrichment: a stateful function per user over
profiles, searches and clicks) against the embedded broker and a real SparkSession: at every
commit the table equals a plain-Python evaluation of its definition on the offsets the commit
records, with one record per batch over the first 150, then 997 and 250,000; profiles are
deleted, and versions and searches land on the click's millisecond; exactly the late records are
dead-lettered, also after two SIGKILLs and a resume."""

from __future__ import annotations

import pytest

from bench.support.producing import clickstream_with_profiles, send
from bench.support.reference import replay_stamped
from tests.integration.helpers import (
    check_commits,
    check_every_batching,
    kill_twice_mid_run,
    run_until_caught_up,
)
from tests.support.seed_references import clicks_enriched_reference

pytestmark = pytest.mark.integration

NAME = "clicks_enriched"
TOPICS = ["profiles", "searches", "clicks"]


def test_clicks_equal_the_reference_at_every_commit_whatever_the_batching(spark, settings, broker):
    log = clickstream_with_profiles(700, seed=61)
    send(settings, log[:150])
    run_until_caught_up(spark, settings, NAME, version="cap1", max_offsets_per_trigger=1)
    send(settings, log[150:])
    records = replay_stamped(settings.kafka.bootstrap_servers, TOPICS)
    assert any(r.value is None for r in records if r.topic == "profiles")
    final = check_every_batching(
        spark, settings, NAME, records, clicks_enriched_reference, "click_id", 10
    )
    counts = [r["search_count"] for r in final.values()]
    assert min(counts.count(0), counts.count(1), sum(c > 1 for c in counts)) > 50
    assert 0 < sum(r["age"] is None for r in final.values()) < len(counts) / 2


def test_sigkills_mid_run_then_resume_equal_the_reference(spark, settings, broker):
    send(settings, clickstream_with_profiles(1200, seed=63))
    first, second = kill_twice_mid_run(settings, NAME, max_offsets=100, batches=3)
    assert 3 <= first < second < 25
    run_until_caught_up(spark, settings, NAME, max_offsets_per_trigger=500)
    records = replay_stamped(settings.kafka.bootstrap_servers, TOPICS)
    commits_made, table = check_commits(
        settings, NAME, "v2", records, clicks_enriched_reference, "click_id"
    )
    assert commits_made > second and len(table) > 500
