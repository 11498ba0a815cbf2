"""click_sessions (session windows: 30 minutes without a click end a user's session, grace 10
minutes) against the embedded broker and a real SparkSession: at every checked commit the table
equals a plain-Python evaluation on the offsets the commit records, whatever the batch caps and
across two SIGKILLs; a late click within grace bridging two sessions merges them, and a click
later than grace is dead-lettered."""

from __future__ import annotations

import json

import pytest

from bench.support.producing import Out, clickstream, send
from bench.support.reference import replay_stamped
from streaming.delta.table_reader import commits, read_arrow
from streaming.deployment import Deployment
from tests.integration.helpers import (
    check_commits,
    check_every_batching,
    kill_twice_mid_run,
    late_dead_letters,
    run_until_caught_up,
)
from tests.support.seed_references import click_sessions_reference

pytestmark = pytest.mark.integration

NAME = "click_sessions"
KEY = ("user_id", "session_start")
MINUTE = 60_000
# 100 users, one event per 20 s: a user's clicks are about 55 minutes apart on average, so
# sessions of one click and of several both occur.
USERS = 100


def test_sessions_equal_the_reference_at_every_commit_whatever_the_batching(
    spark, settings, broker
):
    send(settings, clickstream(150, seed=81, users=USERS))
    run_until_caught_up(spark, settings, NAME, version="cap1", max_offsets_per_trigger=1)
    send(settings, clickstream(1500, seed=82, users=USERS, start_ms=1_700_003_000_000))
    records = replay_stamped(settings.kafka.bootstrap_servers, ["clicks"])
    final = check_every_batching(spark, settings, NAME, records, click_sessions_reference, KEY, 20)
    sizes = {row["clicks"] for row in final.values()}
    assert 1 in sizes and max(sizes) >= 3, sizes


def test_sigkills_mid_run_then_resume_equal_the_reference(spark, settings, broker):
    send(settings, clickstream(2500, seed=83, users=USERS))
    first, second = kill_twice_mid_run(settings, NAME, max_offsets=100, batches=3)
    assert 3 <= first < second < 25
    run_until_caught_up(spark, settings, NAME, max_offsets_per_trigger=500)
    records = replay_stamped(settings.kafka.bootstrap_servers, ["clicks"])
    check_commits(settings, NAME, "v1", records, click_sessions_reference, KEY)


def _clicks(user: str, *minutes: int, start: int = 1_700_000_000_000) -> list[Out]:
    out = []
    for m in minutes:
        t = start + m * MINUTE
        value = {"click_id": f"{user}-{m}", "user_id": user, "url": "/", "ts": t}
        out.append(Out("clicks", user.encode(), json.dumps(value).encode(), timestamp=t))
    return out


def test_a_late_click_within_grace_bridging_two_sessions_merges_them(spark, settings, broker):
    t0 = 1_700_000_000_000
    # Two sessions 35 minutes apart: [0, 0] and [35, 35].
    send(settings, _clicks("ann", 0, 35))
    run_until_caught_up(spark, settings, NAME)
    table = Deployment(NAME, "v1", settings.home).table_path
    before = commits(table)[-1].table_version
    # A click at 28 minutes is within grace (stream time 35, grace 10) and within 30 minutes of
    # both: one session [0, 35] of three clicks. One at 20 minutes is late: dead-lettered.
    send(settings, _clicks("ann", 28, 20))
    run_until_caught_up(spark, settings, NAME)

    def rows(version: int) -> dict:
        found = read_arrow(table, version).to_pylist()
        return {(r["user_id"], r["session_start"]): (r["session_end"], r["clicks"]) for r in found}

    two = {("ann", t0): (t0, 1), ("ann", t0 + 35 * MINUTE): (t0 + 35 * MINUTE, 1)}
    merged = {("ann", t0): (t0 + 35 * MINUTE, 3)}
    assert rows(before) == two
    after = commits(table)[-1].table_version
    assert rows(after) == merged
    # One commit took the merged-away session out and rewrote the surviving one: no version
    # in between shows anything else.
    assert all(rows(v) in (two, merged) for v in range(before, after + 1))
    records = replay_stamped(settings.kafka.bootstrap_servers, ["clicks"])
    late = {(r.topic, r.partition, r.offset) for r in records if b'"ann-20"' in r.value}
    assert late_dead_letters(settings, NAME, "v1") == late and len(late) == 1
