"""The demo pipelines against the embedded broker and a real SparkSession, checked against an
independent replay of the topic in plain Python."""

from __future__ import annotations

import pytest

from kappa.testing.producing import Out, customer_changes, send, transactions
from kappa.testing.reference import customers_state, replay, spend_state
from streaming.delta.table_reader import commits
from streaming.run.deployment import Deployment
from tests.integration.helpers import run_until_caught_up, table_rows

pytestmark = pytest.mark.integration


def test_customers_table_is_the_compacted_topic(spark, settings, broker):
    send(settings, customer_changes(6000, seed=1))
    snapshot = run_until_caught_up(spark, settings, "customers")
    expected = customers_state(replay(settings.kafka.bootstrap_servers, "customers"))
    assert table_rows(settings, "customers") == expected
    assert snapshot.records_processed == 6000
    assert snapshot.total_lag == 0
    assert snapshot.table_rows == len(expected)

    # More changes later, including deletes of live keys and re-creations: an incremental run
    # resumes from the checkpoint and still equals the full replay.
    live = sorted(expected)[:20]
    later = [Out("customers", k.encode(), None) for k in live[:10]]
    later += customer_changes(3000, seed=2)
    send(settings, later)
    snapshot = run_until_caught_up(spark, settings, "customers", max_offsets_per_trigger=700)
    expected = customers_state(replay(settings.kafka.bootstrap_servers, "customers"))
    assert table_rows(settings, "customers") == expected
    assert snapshot.records_processed == len(later)
    assert snapshot.batches >= 4


def test_every_commit_records_the_offsets_it_covers(spark, settings, broker):
    send(settings, customer_changes(2000, seed=3))
    run_until_caught_up(spark, settings, "customers", max_offsets_per_trigger=500)
    history = commits(Deployment("customers", "v1", settings.home).table_path)
    assert [c.batch_id for c in history] == list(range(len(history)))
    assert len(history) >= 4
    ends = [sum(o for parts in c.end_offsets.values() for o in parts.values()) for c in history]
    assert ends == sorted(ends) and ends[-1] == 2000


def test_customer_spend_folds_every_transaction_exactly_once(spark, settings, broker):
    send(settings, transactions(5000, seed=4))
    run_until_caught_up(spark, settings, "customer_spend", max_offsets_per_trigger=1500)
    send(settings, transactions(2000, seed=5))
    run_until_caught_up(spark, settings, "customer_spend")
    expected = spend_state(replay(settings.kafka.bootstrap_servers, "transactions"))
    assert table_rows(settings, "customer_spend") == expected
    assert sum(r["txn_count"] for r in expected.values()) == 7000


def test_rerunning_a_caught_up_pipeline_changes_nothing(spark, settings, broker):
    send(settings, transactions(1000, seed=6))
    run_until_caught_up(spark, settings, "customer_spend")
    before = table_rows(settings, "customer_spend")
    snapshot = run_until_caught_up(spark, settings, "customer_spend")
    assert snapshot.batches == 0
    assert snapshot.total_lag == 0  # its position is the table's last commit, from before the run
    assert table_rows(settings, "customer_spend") == before
