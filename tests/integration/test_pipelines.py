"""The demo pipelines against the embedded broker and a real SparkSession, checked against an
independent replay of the topic in plain Python."""

from __future__ import annotations

import pytest

from bench.support.producing import Out, customer_changes, send, transactions
from bench.support.reference import customers_state, replay, spend_state, table_state
from streaming.delta.table_reader import commits, read_arrow
from streaming.deployment import Deployment
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
    path = Deployment("customers", "v1", settings.home).table_path
    history = commits(path)
    assert [c.batch_id for c in history] == list(range(len(history)))
    assert len(history) >= 4
    records = replay(settings.kafka.bootstrap_servers, "customers")
    log_ends: dict[int, int] = {}
    for r in records:
        log_ends[r.partition] = max(log_ends.get(r.partition, 0), r.offset + 1)
    assert len(log_ends) > 1  # several partitions, so per-partition mistakes can show
    previous: dict[int, int] = {}
    for commit in history:
        ends = {int(p): o for p, o in commit.end_offsets["customers"].items()}
        assert all(ends.get(p, 0) >= o for p, o in previous.items()), (previous, ends)
        assert all(o <= log_ends.get(p, 0) for p, o in ends.items()), (ends, log_ends)
        # The table as of this commit is exactly the topic replayed up to these offsets.
        covered = [r for r in records if r.offset < ends.get(r.partition, 0)]
        at_commit = table_state(read_arrow(path, commit.table_version).to_pylist(), "customer_id")
        assert at_commit == customers_state(covered), f"batch {commit.batch_id} at {ends}"
        previous = ends
    assert previous == log_ends


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
