"""Crashes lose and duplicate nothing; a broker that lost its log stops the query loudly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from kappa.testing.producing import customer_changes, send, transactions
from kappa.testing.reference import customers_state, replay, spend_state
from streaming.delta.table_reader import commits
from streaming.errors import DataLossError
from streaming.run.deployment import Deployment
from streaming.settings import REPO_ROOT
from streaming.wait import wait_until
from tests.integration.helpers import run_until_caught_up, table_rows

pytestmark = pytest.mark.integration


def _committed_batches(settings, name: str = "customer_spend") -> int:  # type: ignore[no-untyped-def]
    path = Deployment(name, "v1", settings.home).table_path
    try:
        return len(commits(path))
    except FileNotFoundError:
        return 0


def test_sigkill_mid_run_then_rerun_equals_reference(spark, settings, broker):
    send(settings, transactions(40_000, seed=9))
    env = {**os.environ, **settings.to_env()}
    cmd = [
        sys.executable,
        "-m",
        "streaming",
        "run",
        "customer_spend",
        "--until-caught-up",
        "--max-offsets-per-trigger",
        "2000",
    ]
    proc = subprocess.Popen(
        cmd,
        env=env,
        cwd=REPO_ROOT,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        assert wait_until(
            lambda: _committed_batches(settings) >= 3 or proc.poll() is not None, timeout_s=180
        ), "the pipeline never committed"
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:] if proc.stderr else ""
        os.killpg(proc.pid, signal.SIGKILL)  # the Python driver, its JVM and its workers
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    killed_at = _committed_batches(settings)
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
    cmd = [sys.executable, "-m", "streaming", "run", "customers", "--until-caught-up"]
    proc = subprocess.Popen(
        [*cmd, "--max-offsets-per-trigger", "1500"],
        env={**os.environ, **settings.to_env()},
        cwd=REPO_ROOT,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        assert wait_until(
            lambda: _committed_batches(settings, "customers") >= 3 or proc.poll() is not None,
            timeout_s=180,
        ), "the pipeline never committed"
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:] if proc.stderr else ""
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert 3 <= _committed_batches(settings, "customers") < 20

    run_until_caught_up(spark, settings, "customers")

    expected = customers_state(replay(settings.kafka.bootstrap_servers, "customers"))
    assert table_rows(settings, "customers") == expected
    history = commits(Deployment("customers", "v1", settings.home).table_path)
    assert [c.batch_id for c in history] == list(range(len(history)))


def test_broker_that_lost_its_log_stops_the_query_with_data_loss(spark, settings, broker):
    send(settings, transactions(500, seed=10))
    run_until_caught_up(spark, settings, "customer_spend")
    broker.stop()  # the in-memory broker forgets every topic
    broker.start()  # same port, empty memory
    send(settings, transactions(100, seed=11))  # recreated topic, log ends below the checkpoint
    before = table_rows(settings, "customer_spend")
    with pytest.raises(DataLossError) as caught:
        run_until_caught_up(spark, settings, "customer_spend")
    assert "transactions-" in str(caught.value) and "log ends at" in str(caught.value)
    assert table_rows(settings, "customer_spend") == before
