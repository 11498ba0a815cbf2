"""clicks_per_zip (clicks_enriched's plan regrouped: clicks per zip code of the profile and hour)
against the embedded broker and a real SparkSession, the enrichment per input partition and the
counts per bucket of zip codes after a shuffle: at every commit the table equals a
plain-Python count over the enriched clicks of the offsets the commit records, with one record per
batch over the first 150, then 997 and 250,000; clicks move between zip codes as profiles are
corrected and deleted; exactly the late records are dead-lettered, also after two SIGKILLs and a
resume."""

from __future__ import annotations

import pytest

from bench.support.producing import clickstream_with_profiles, send
from bench.support.reference import replay_stamped
from streaming.delta.table_reader import commits
from streaming.deployment import Deployment
from streaming.deployment.record import GROUP_STATE
from tests.integration.helpers import (
    check_commits,
    check_every_batching,
    kill_twice_mid_run,
    run_until_caught_up,
)
from tests.support.seed_references import clicks_per_zip_reference

pytestmark = pytest.mark.integration

NAME = "clicks_per_zip"
TOPICS = ["profiles", "searches", "clicks"]
KEY = ("zip_code", "window_start")


def test_counts_equal_the_reference_at_every_commit_whatever_the_batching(spark, settings, broker):
    # 20 s apart, the clicks span four hours; 8 users' profiles keep moving between zip codes.
    log = clickstream_with_profiles(700, seed=71, users=8, step_ms=20_000)
    send(settings, log[:150])
    run_until_caught_up(spark, settings, NAME, version="cap1", max_offsets_per_trigger=1)
    send(settings, log[150:])
    records = replay_stamped(settings.kafka.bootstrap_servers, TOPICS)
    final = check_every_batching(spark, settings, NAME, records, clicks_per_zip_reference, KEY, 10)
    hours = {start for _, start in final}
    assert len(hours) >= 4 and sum(r["clicks"] for r in final.values()) > 300
    assert max(r["clicks"] for r in final.values()) > 3


def test_sigkills_mid_run_then_resume_equal_the_reference(spark, settings, broker):
    send(settings, clickstream_with_profiles(1200, seed=73, users=8, step_ms=20_000))
    first, second = kill_twice_mid_run(settings, NAME, max_offsets=100, batches=3)
    assert 3 <= first < second < 25
    run_until_caught_up(spark, settings, NAME, max_offsets_per_trigger=500)
    records = replay_stamped(settings.kafka.bootstrap_servers, TOPICS)
    commits_made, table = check_commits(
        settings, NAME, "v1", records, clicks_per_zip_reference, KEY
    )
    assert commits_made > second and len(table) > 20
    # The clicks ran per input partition, the groups per bucket of zip codes, after a shuffle.
    versions = commits(Deployment(NAME, "v1", settings.home).table_path)[-1].state_versions or {}
    assert {p for p in versions if p < GROUP_STATE} == {r.partition for r in records}
    assert {p - GROUP_STATE for p in versions if p >= GROUP_STATE} == {0, 1, 2, 3}
