"""Crashes lose and duplicate nothing; a broker that lost its log stops the query loudly."""

from __future__ import annotations

import pytest

from bench.support.broker import delete_topics
from bench.support.producing import customer_changes, send, transactions
from bench.support.reference import customers_state, replay, spend_state
from streaming.delta.table_reader import commits
from streaming.deployment import Deployment
from streaming.errors import DataLossError
from tests.integration.helpers import kill_mid_run, run_until_caught_up, table_rows

pytestmark = pytest.mark.integration


def test_sigkill_mid_run_then_rerun_equals_reference(spark, settings, broker):
    send(settings, transactions(40_000, seed=9))
    killed_at = kill_mid_run(settings, "customer_spend", max_offsets=2000, batches=3)
    assert 3 <= killed_at < 20

    run_until_caught_up(spark, settings, "customer_spend")

    expected = spend_state(replay(settings.kafka.bootstrap_servers, "transactions"))
    assert table_rows(settings, "customer_spend") == expected
    assert sum(r["txn_count"] for r in expected.values()) == 40_000
    history = commits(Deployment("customer_spend", "v1", settings.home).table_path)
    assert [c.batch_id for c in history] == list(range(len(history)))  # no batch applied twice


def test_sigkill_of_an_upsert_table_mid_run_then_rerun_equals_reference(spark, settings, broker):
    """The same for a table written with deletion vectors (data files written before the commit
    that the kill may orphan): the rerun still equals the replay."""
    send(settings, customer_changes(30_000, seed=12, keys=3000))
    assert 3 <= kill_mid_run(settings, "customers", max_offsets=1500, batches=3) < 20

    run_until_caught_up(spark, settings, "customers")

    expected = customers_state(replay(settings.kafka.bootstrap_servers, "customers"))
    assert table_rows(settings, "customers") == expected
    history = commits(Deployment("customers", "v1", settings.home).table_path)
    assert [c.batch_id for c in history] == list(range(len(history)))


def test_broker_that_lost_its_log_stops_the_query_with_data_loss(spark, settings, broker):
    send(settings, transactions(500, seed=10))
    run_until_caught_up(spark, settings, "customer_spend")
    delete_topics(settings.kafka.client_config(), ["transactions"])  # the log is gone
    send(settings, transactions(100, seed=11))  # recreated topic, log ends below the checkpoint
    before = table_rows(settings, "customer_spend")
    with pytest.raises(DataLossError) as caught:
        run_until_caught_up(spark, settings, "customer_spend")
    assert "transactions-" in str(caught.value) and "log ends at" in str(caught.value)
    assert table_rows(settings, "customer_spend") == before
