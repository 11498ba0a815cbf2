"""The demo pipelines on a real Spark standalone cluster (``kappa cluster start``): a master and
two workers on 127.0.0.1; the engine on it runs three deployments at once, the executors reading
Kafka and writing the table's files, checked against an independent replay of the topic in plain
Python, ``clicks_per_zip`` with its groups shuffled between executors; then, in a process of its
own, a worker killed mid-run; then the stateful
``transactions_enriched`` and ``spend_hourly`` (their state partitions on the executors) through
a worker killed and a driver restarted, every commit equal to the reference at the offsets it
records."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.support.producing import (
    clickstream_with_profiles,
    customer_changes,
    fraud_events,
    send,
    transactions,
)
from bench.support.reference import customers_state, replay, replay_stamped, spend_state
from bench.support.settings import free_port, private_settings
from kappa.broker import EmbeddedBroker
from kappa.cluster import SparkCluster
from streaming.delta.table_reader import commits
from streaming.deployment import Deployment
from streaming.engine.client import EngineClient, ensure_engine, stop_engine
from streaming.run.options import RunOptions
from streaming.settings import REPO_ROOT, Settings
from streaming.wait import wait_until
from tests.integration.helpers import check_commits, committed_batches, table_rows
from tests.support.enrichment import enriched_reference, spend_hourly_reference
from tests.support.seed_references import clicks_per_zip_reference

pytestmark = [pytest.mark.integration, pytest.mark.slow(seconds=110)]


@pytest.fixture
def settings(tmp_path: Path, shared_broker: EmbeddedBroker) -> Settings:
    """A private home on the shared broker, with Spark pointed at this test's standalone
    master."""
    broker = shared_broker.settings.broker
    where = {"broker_port": broker.port, "controller_port": broker.controller_port}
    ports = {"cluster.port": free_port(), "cluster.ui_port": free_port()}
    master = private_settings(tmp_path / "home", **where, **ports).cluster.master_url
    return private_settings(tmp_path / "home", **where, **ports, **{"spark.master": master})


@pytest.fixture
def cluster(settings: Settings) -> Iterator[SparkCluster]:
    spark_cluster = SparkCluster(settings)
    try:
        spark_cluster.start()
        yield spark_cluster
    finally:
        spark_cluster.stop()


def _run(settings: Settings, name: str, *args: str) -> subprocess.Popen:
    """``python -m streaming run NAME --until-caught-up`` on the cluster, in its own group."""
    return subprocess.Popen(
        [sys.executable, "-m", "streaming", "run", name, "--until-caught-up", *args],
        env={**os.environ, **settings.to_env()},
        cwd=REPO_ROOT,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def _finish(proc: subprocess.Popen, timeout_s: float = 300) -> None:
    try:
        _, err = proc.communicate(timeout=timeout_s)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, err.decode()[-3000:]


def _executor_dirs(settings: Settings, worker: str) -> list[Path]:
    """The executor directories a worker created (``<work dir>/app-*/<executor id>``)."""
    return [p for p in (settings.home.cluster / worker).glob("app-*/*") if p.is_dir()]


def _caught_up(client: EngineClient, deployments: list[str], timeout_s: float = 300) -> None:
    def ended() -> bool:
        return all(client.deployment(d)["state"] in ("caught_up", "failed") for d in deployments)

    assert wait_until(ended, timeout_s, interval_s=0.5), client.deployments()
    states = {
        d: (client.deployment(d)["state"], client.deployment(d)["error"]) for d in deployments
    }
    assert all(state == "caught_up" for state, _ in states.values()), states


def test_the_engine_runs_the_pipelines_on_the_cluster_equal_to_the_reference(
    settings, cluster, broker
):
    """The engine as `kappa up` starts it, with the cluster as its master: its deployments'
    tasks run in the workers' executors."""
    status = cluster.status()
    assert status.alive_workers == 2 and status.master_url.startswith("spark://127.0.0.1:")
    send(settings, customer_changes(6000, seed=21))
    send(settings, transactions(5000, seed=22))
    send(settings, clickstream_with_profiles(800, seed=27, users=12, step_ms=20_000))
    client = ensure_engine(settings)
    try:
        assert client.health()["master"] == status.master_url
        # Three deployments at once in the one application: a compacted table, an aggregate,
        # and a plan that regroups (the clicks per input partition, a shuffle between
        # executors, the zip codes per bucket).
        for name, cap in (("customers", 1500), ("customer_spend", 2000), ("clicks_per_zip", 400)):
            options = RunOptions(mode="until_caught_up", max_offsets_per_trigger=cap)
            client.submit(name, "v1", options.model_dump(), f"cluster-{name}")
        _caught_up(client, ["customers__v1", "customer_spend__v1", "clicks_per_zip__v1"])
    finally:
        stop_engine(settings.home)

    servers = settings.kafka.bootstrap_servers
    assert table_rows(settings, "customers") == customers_state(replay(servers, "customers"))
    expected_spend = spend_state(replay(servers, "transactions"))
    assert table_rows(settings, "customer_spend") == expected_spend
    assert sum(r["txn_count"] for r in expected_spend.values()) == 5000
    # The work ran in executors the workers started (a standalone driver runs no task).
    for worker in cluster.worker_names():
        assert _executor_dirs(settings, worker), f"{worker} ran no executor"
    history = commits(Deployment("customers", "v1", settings.home).table_path)
    assert [c.batch_id for c in history] == list(range(len(history))) and len(history) >= 4
    records = replay_stamped(servers, ["profiles", "searches", "clicks"])
    key = ("zip_code", "window_start")
    made, table = check_commits(
        settings, "clicks_per_zip", "v1", records, clicks_per_zip_reference, key
    )
    assert made >= 3 and len(table) > 20


def test_a_worker_killed_mid_run_loses_and_duplicates_nothing(settings, cluster, broker):
    send(settings, customer_changes(30_000, seed=23, keys=2000))
    table = Deployment("customers", "v1", settings.home).table_path

    def committed() -> int:
        try:
            return len(commits(table))
        except Exception:
            return 0

    proc = _run(settings, "customers", "--max-offsets-per-trigger", "1000")
    try:
        assert wait_until(lambda: committed() >= 3 or proc.poll() is not None, timeout_s=240)
        assert proc.poll() is None, "the run ended before the worker could be killed"
        victim = cluster.worker_names()[0]
        pid = int(settings.home.cluster_pid(victim).read_text())
        os.killpg(pid, signal.SIGKILL)  # the worker, its executor and the executor's Python
        killed_at = committed()
        _finish(proc)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert killed_at < 30, "the run was nearly over when the worker died"
    assert cluster.status().alive_workers == 1
    servers = settings.kafka.bootstrap_servers
    assert table_rows(settings, "customers") == customers_state(replay(servers, "customers"))
    history = commits(table)
    assert [c.batch_id for c in history] == list(range(len(history)))


def test_stateful_pipelines_survive_a_worker_killed_and_a_driver_restart(settings, cluster, broker):
    send(settings, fraud_events(6000, seed=25))
    # transactions_enriched loses a worker mid-run; spend_hourly's driver is killed and rerun.
    enriched = _run(settings, "transactions_enriched", "--max-offsets-per-trigger", "400")
    try:
        assert wait_until(
            lambda: (
                committed_batches(settings, "transactions_enriched") >= 3
                or enriched.poll() is not None
            ),
            timeout_s=300,
        )
        assert enriched.poll() is None, "the run ended before the worker could be killed"
        victim = cluster.worker_names()[0]
        os.killpg(int(settings.home.cluster_pid(victim).read_text()), signal.SIGKILL)
        _finish(enriched)
    finally:
        if enriched.poll() is None:
            os.killpg(enriched.pid, signal.SIGKILL)
            enriched.wait()
    assert cluster.status().alive_workers == 1

    hourly = _run(settings, "spend_hourly", "--max-offsets-per-trigger", "400")
    try:
        assert wait_until(
            lambda: committed_batches(settings, "spend_hourly") >= 2 or hourly.poll() is not None,
            timeout_s=300,
        )
        assert hourly.poll() is None, "the run ended before its driver could be killed"
    finally:
        os.killpg(hourly.pid, signal.SIGKILL)
        hourly.wait()
    killed_at = committed_batches(settings, "spend_hourly")
    _finish(_run(settings, "spend_hourly", "--max-offsets-per-trigger", "1000"))

    records = replay_stamped(settings.kafka.bootstrap_servers, ["customers", "transactions"])
    commits, _ = check_commits(
        settings, "transactions_enriched", "v1", records, enriched_reference, "txn_id"
    )
    assert commits >= 10
    key = ("customer_id", "window_start")
    commits, _ = check_commits(settings, "spend_hourly", "v1", records, spend_hourly_reference, key)
    assert commits > killed_at
