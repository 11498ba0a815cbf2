"""A published topic follows the live version across promotion and rollback: at the first batch
it publishes after a switch, the new live version brings the topic to its whole table (history
included), so a reader of the topic sees exactly the live version's table, not a mix."""

from __future__ import annotations

import dataclasses
import json
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from bench.support.producing import fraud_events, send
from bench.support.reference import changelog_table, replay_stamped
from streaming.define.registry import get_pipeline
from streaming.delta.table_reader import read_arrow
from streaming.deployment import Deployment
from streaming.versions.live_pointer import claim_first, switch
from tests.integration.helpers import run_until_caught_up

pytestmark = pytest.mark.integration

START_MS = 1_700_000_000_000


def _topic_table(settings) -> dict[str, dict]:  # type: ignore[no-untyped-def]
    """The topic read back by a plain consumer."""
    return changelog_table(replay_stamped(settings.kafka.bootstrap_servers, ["fraud_alerts"]))


def _table(settings, version: str) -> dict[str, dict]:  # type: ignore[no-untyped-def]
    path = Deployment("fraud_alerts", version, settings.home).table_path
    rows = read_arrow(path).to_pylist()
    return {row["txn_id"]: json.loads(json.dumps(row, default=float)) for row in rows}


def _run(spark, settings, pipeline) -> None:  # type: ignore[no-untyped-def]
    run_until_caught_up(spark, settings, pipeline, max_offsets_per_trigger=200)


def _more_input(spark, settings, n: int, seed: int, start_ms: int) -> None:  # type: ignore[no-untyped-def]
    send(settings, fraud_events(n, seed=seed, start_ms=start_ms))
    run_until_caught_up(spark, settings, "transactions_enriched", max_offsets_per_trigger=300)


def test_the_topic_follows_the_live_version_through_promotion_and_rollback(spark, settings, broker):
    v1 = get_pipeline(settings.pipelines, "fraud_alerts")
    # v2 changes the rule: only suspicious transactions above 250 are alerts
    assert v1.plan is not None
    big = v1.plan.where(pc.field("amount") > pa.scalar(Decimal("250.00"), pa.decimal128(18, 2)))
    v2 = dataclasses.replace(v1, version="v2", plan=big)
    claim_first(settings.home, "fraud_alerts", "v1", "first deployment")

    _more_input(spark, settings, 900, seed=51, start_ms=START_MS)
    _run(spark, settings, v1)
    _run(spark, settings, v2)  # side by side: v2 is not live, it publishes nothing
    first = _table(settings, "v1")
    assert 0 < len(_table(settings, "v2")) < len(first)
    assert _topic_table(settings) == first

    switch(settings.home, "fraud_alerts", "v2", "promote", expect_from="v1")
    _more_input(spark, settings, 300, seed=52, start_ms=START_MS + 900_000)
    _run(spark, settings, v1)  # still running, no longer live: sends nothing
    _run(spark, settings, v2)
    promoted = _table(settings, "v2")
    assert _topic_table(settings) == promoted

    switch(settings.home, "fraud_alerts", "v1", "rollback", expect_from="v2")
    _more_input(spark, settings, 300, seed=53, start_ms=START_MS + 1_200_000)
    _run(spark, settings, v2)
    _run(spark, settings, v1)
    rolled_back = _table(settings, "v1")
    assert len(rolled_back) > len(first)
    assert _topic_table(settings) == rolled_back
