"""fraud_by_history (a stateful function the user writes, per customer, over the payment
history) against the embedded broker and a real SparkSession: at every commit the table equals a
plain-Python evaluation of its definition on the offsets the commit records, with one payment
per batch over the first 105, then 997 and 250,000; an alert is withdrawn when a payment before
it in event time arrives after it; exactly the late payments are dead-lettered, also after two
SIGKILLs and a resume. A v2 asking for more history is reprocessed beside v1, compared at equal
offsets and promoted."""

from __future__ import annotations

import dataclasses
import json

import pytest

from bench.support.producing import Out, payments, send
from bench.support.reference import log_ends, replay_stamped
from pipelines.fraud_by_history import alerts
from quality.rules import ComparisonPolicy
from streaming.define.registry import get_pipeline, registry
from streaming.delta.table_reader import commits
from streaming.deployment import Deployment
from streaming.kafka.offsets import from_spark
from streaming.versions.live_pointer import live_version, switch
from streaming.versions.promotion import promote
from tests.integration.helpers import (
    check_commits,
    check_every_batching,
    kill_twice_mid_run,
    run_until_caught_up,
)
from tests.support.seed_references import fraud_by_history_reference

pytestmark = pytest.mark.integration

NAME = "fraud_by_history"
START_MS = 1_700_000_000_000


def _corrected() -> list[Out]:
    """Three EU payments of one customer, one from the US (an alert), then an earlier one from
    the US (within grace): the first alert is withdrawn, the earlier payment is the alert."""
    out = []
    history = [("DE", 1), ("FR", 2), ("IT", 3), ("US", 20), ("US", 10)]
    for i, (country, seconds) in enumerate(history):
        t = START_MS + seconds * 1_000
        value = {"txn_id": f"fix-{i}", "customer_id": "q001", "amount": 9.5, "currency": "EUR"}
        value.update(country=country, ts=t)
        out.append(Out("transactions", b"q001", json.dumps(value).encode(), timestamp=t))
    return out


def test_alerts_equal_the_reference_at_every_commit_whatever_the_batching(spark, settings, broker):
    log = payments(1500, seed=81, start_ms=START_MS)
    send(settings, _corrected())
    send(settings, log[:100])
    run_until_caught_up(spark, settings, NAME, version="cap1", max_offsets_per_trigger=1)
    send(settings, log[100:])
    records = replay_stamped(settings.kafka.bootstrap_servers, ["transactions"])
    assert {r.partition for r in records} == {0, 1, 2, 3}
    final = check_every_batching(
        spark, settings, NAME, records, fraud_by_history_reference, "txn_id", 1
    )
    assert len(final) > 40

    # The table went through the correction: fix-3 was an alert at a commit of one payment per
    # batch and is none at a later one (the reference, equal to every such commit, says when).
    alerted: set[str] = set()
    withdrawn = set()
    for commit in commits(Deployment(NAME, "cap1", settings.home).table_path):
        rows, _ = fraud_by_history_reference(records, from_spark(commit.end_offsets))
        withdrawn |= alerted - set(rows)
        alerted |= set(rows)
    assert "fix-3" in withdrawn and "fix-4" in final


def test_sigkills_mid_run_then_resume_equal_the_reference(spark, settings, broker):
    send(settings, payments(3000, seed=83, start_ms=START_MS))
    first, second = kill_twice_mid_run(settings, NAME, max_offsets=100, batches=3)
    assert 3 <= first < second < 30
    run_until_caught_up(spark, settings, NAME, max_offsets_per_trigger=500)
    records = replay_stamped(settings.kafka.bootstrap_servers, ["transactions"])
    commits_made, table = check_commits(
        settings, NAME, "v1", records, fraud_by_history_reference, "txn_id"
    )
    assert commits_made > second and len(table) > 40


def test_a_changed_threshold_is_compared_at_equal_offsets_and_promoted(
    spark, settings, broker, monkeypatch
):
    send(settings, payments(900, seed=84, start_ms=START_MS))
    v1 = get_pipeline(settings.pipelines, NAME)
    run_until_caught_up(spark, settings, v1)
    switch(settings.home, NAME, "v1", "first deployment")
    # v2 alerts only after 5 earlier payments: the alerts after 3 or 4 are dropped, as declared.
    v2 = dataclasses.replace(
        v1, version="v2", plan=alerts(5), comparison=ComparisonPolicy(min_key_overlap=0.0)
    )
    monkeypatch.setitem(registry(settings.pipelines), NAME, v2)
    run_until_caught_up(spark, settings, v2, max_offsets_per_trigger=300)
    promotion = promote(settings, NAME, "v2", wait_s=60)

    records = replay_stamped(settings.kafka.bootstrap_servers, ["transactions"])
    at = from_spark(promotion.switch.comparison["at_offsets"]["offsets"])
    assert at == log_ends(records)
    old, _ = fraud_by_history_reference(records, at)
    new, _ = fraud_by_history_reference(records, at, min_history=5)
    dropped = set(old) - set(new)
    assert dropped and set(new) <= set(old)
    result = promotion.comparison
    assert result.passed and result.coverage.in_both == len(new) > 0
    assert (result.coverage.only_old, result.coverage.only_new) == (len(dropped), 0)
    assert not [c.column for c in result.columns if c.mismatched]
    assert live_version(settings.home, NAME) == "v2"
