"""quiet_customers (an event-time timer per customer) against the embedded broker and a real
SparkSession: at every commit the table equals a plain-Python evaluation of its definition on
the offsets the commit records, with one transaction per batch over the first 60, then 997 and
250,000, and across two SIGKILLs and a resume; exactly the late transactions are
dead-lettered."""

from __future__ import annotations

import json
import random

import pytest

from bench.support.producing import Out, send
from bench.support.reference import replay_stamped
from streaming.delta.table_reader import commits
from streaming.deployment import Deployment
from streaming.kafka.offsets import from_spark
from tests.integration.helpers import (
    check_commits,
    check_every_batching,
    kill_twice_mid_run,
    run_until_caught_up,
)
from tests.support.seed_references import quiet_customers_reference

pytestmark = pytest.mark.integration

NAME = "quiet_customers"
START_MS = 1_700_000_000_000
MINUTE_MS = 60_000
DAY_MS = 24 * 60 * MINUTE_MS


def quiet_log(n: int, seed: int, customers: int = 800) -> list[Out]:
    """Transactions about 20 minutes apart (exponentially), so a customer's gaps are ~11 days
    on average and some exceed 30; 8% up to 9 minutes out of order (within grace), 1.5% one to
    three days old (late)."""
    rng = random.Random(seed)
    out, now = [], START_MS
    for i in range(n):
        now += int(rng.expovariate(1 / (20 * MINUTE_MS)))
        draw, t = rng.random(), now
        if draw < 0.08:
            t -= rng.randrange(1_000, 9 * MINUTE_MS)
        elif draw < 0.095:
            t -= rng.randrange(DAY_MS, 3 * DAY_MS)
        cid = f"c{rng.randrange(customers):04d}"
        value = {"txn_id": f"q{seed}-{i}", "customer_id": cid, "amount": 1.5, "currency": "EUR"}
        value.update(country="DE", ts=t)
        out.append(Out("transactions", cid.encode(), json.dumps(value).encode(), timestamp=t))
    return out


def test_quiet_customers_equal_the_reference_at_every_commit_whatever_the_batching(
    spark, settings, broker
):
    log = quiet_log(5000, seed=91)
    send(settings, log[:60])
    run_until_caught_up(spark, settings, NAME, version="cap1", max_offsets_per_trigger=1)
    send(settings, log[60:])
    records = replay_stamped(settings.kafka.bootstrap_servers, ["transactions"])
    final = check_every_batching(
        spark, settings, NAME, records, quiet_customers_reference, "customer_id", 1
    )
    assert len(final) > 20
    # Customers went quiet and came back: their rows were deleted on the way.
    seen: set[str] = set()
    removed: set[str] = set()
    for commit in commits(Deployment(NAME, "cap997", settings.home).table_path):
        rows, _ = quiet_customers_reference(records, from_spark(commit.end_offsets))
        removed |= seen - set(rows)
        seen |= set(rows)
    assert removed


def test_sigkills_mid_run_then_resume_equal_the_reference(spark, settings, broker):
    send(settings, quiet_log(3000, seed=93))
    first, second = kill_twice_mid_run(settings, NAME, max_offsets=100, batches=3)
    assert 3 <= first < second < 30
    run_until_caught_up(spark, settings, NAME, max_offsets_per_trigger=500)
    records = replay_stamped(settings.kafka.bootstrap_servers, ["transactions"])
    commits_made, table = check_commits(
        settings, NAME, "v1", records, quiet_customers_reference, "customer_id"
    )
    assert commits_made > second and len(table) > 10
