"""fraud_alerts, a pipeline derived from transactions_enriched's published changelog: its table
and its own published topic hold exactly the suspicious transactions of the reference."""

from __future__ import annotations

from decimal import Decimal

import pytest

from bench.support.producing import fraud_events, send
from bench.support.reference import changelog_table, log_ends, replay_stamped
from streaming.delta.table_reader import read_arrow
from streaming.deployment import Deployment
from tests.integration.helpers import run_until_caught_up
from tests.support.enrichment import enriched_reference

pytestmark = pytest.mark.integration


def test_alerts_are_the_suspicious_transactions_in_table_and_topic(spark, settings, broker):
    send(settings, fraud_events(1500, seed=31))
    run_until_caught_up(spark, settings, "transactions_enriched", max_offsets_per_trigger=300)
    run_until_caught_up(spark, settings, "fraud_alerts", max_offsets_per_trigger=200)
    inputs = replay_stamped(settings.kafka.bootstrap_servers, ["customers", "transactions"])
    enriched, _ = enriched_reference(inputs, log_ends(inputs))
    expected = {k: row for k, row in enriched.items() if row["suspicious"]}
    assert 0 < len(expected) < len(enriched)

    path = Deployment("fraud_alerts", "v1", settings.home).table_path
    table = {row["txn_id"]: row for row in read_arrow(path).to_pylist()}
    assert table == expected

    published = changelog_table(replay_stamped(settings.kafka.bootstrap_servers, ["fraud_alerts"]))
    assert set(published) == set(expected)
    for key, row in published.items():
        assert Decimal(str(row.pop("amount"))) == expected[key]["amount"]
        assert row == {c: v for c, v in expected[key].items() if c != "amount"}
