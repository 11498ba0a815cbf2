"""Many deployments in one engine: a pipeline that raises fails only its own deployment, and two
versions of one pipeline with different code run side by side, each equal to its own reference.

The engine is the real one (``python -m streaming engine``, its own Spark application), started
as a deployment's client starts it, on the test process's broker; the test speaks to it as a
Dagster run does (``streaming.engine.client``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.support.producing import Out, customer_changes, send, transactions
from bench.support.reference import customers_state, log_ends, replay
from bench.support.settings import private_settings
from streaming.delta.table_reader import latest_commit, read_arrow
from streaming.deployment import Deployment
from streaming.engine.client import EngineClient, ensure_engine, stop_engine
from streaming.kafka.offsets import from_spark
from streaming.run.options import RunOptions
from streaming.settings import Settings
from streaming.wait import wait_until
from tests.integration.user_code import customers_module, user_package

pytestmark = pytest.mark.integration

# A stateful function that raises on one record: a bug in a user's pipeline.
_BOOM = '''"""boom: transactions through a function that raises on the transaction boom."""
from pipelines.topics import TRANSACTIONS
from streaming.define import Pipeline, stateful


@stateful(by="customer_id", key="txn_id", emits="txn_id string, customer_id string")
def check(txn, state):
    if txn["txn_id"] == "boom":
        raise ValueError("a transaction named boom")
    return {"txn_id": txn["txn_id"], "customer_id": txn["customer_id"]}


PIPELINE = Pipeline(name="boom", version="v1", plan=TRANSACTIONS.stream().process(check))
'''

FAST = RunOptions(trigger_interval="0.5 seconds", report_every_s=1.0).model_dump()
# customers a1, the first deployed, is live; these versions do not wait on its position.
ALONE = {**FAST, "follow_live": False}


@pytest.fixture(scope="module")
def engine(tmp_path_factory, shared_broker) -> Iterator[tuple[Settings, Path]]:  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("engine")
    with user_package(root, "engine_user", customers_module("a1")) as package:
        (package / "boom.py").write_text(_BOOM)
        ports = shared_broker.settings.broker
        settings = private_settings(
            root / "home",
            ports.port,
            controller_port=ports.controller_port,
            pipelines="engine_user.customers,engine_user.boom",
        )
        ensure_engine(settings)
        try:
            yield settings, package
        finally:
            stop_engine(settings.home)


def _customers(settings: Settings, version: str, records: int, keep) -> None:  # type: ignore[no-untyped-def]
    """Wait until ``version``'s table has read every customers record, then compare it with the
    reference at its last commit's offsets (``keep``: which reference rows the version keeps)."""
    table = Deployment("customers", version, settings.home).table_path

    def read_all() -> bool:
        commit = latest_commit(table)
        return (
            commit is not None
            and sum(sum(p.values()) for p in from_spark(commit.end_offsets).values()) >= records
        )

    states = [(d["id"], d["state"], d["error"]) for d in EngineClient(settings.home).deployments()]
    assert wait_until(read_all, timeout_s=120), f"customers {version} did not catch up: {states}"
    commit = latest_commit(table)
    assert commit is not None
    log = replay(settings.kafka.bootstrap_servers, "customers")
    ends = from_spark(commit.end_offsets)["customers"]
    expected = {
        k: r
        for k, r in customers_state(r for r in log if r.offset < ends.get(r.partition, 0)).items()
        if keep(r)
    }
    actual = {r["customer_id"]: r for r in read_arrow(table, commit.table_version).to_pylist()}
    assert actual == expected


def _progress(client: EngineClient, deployment: str, since: int) -> list[dict]:
    """The deployment's progress reports numbered ``since`` and later."""
    events = client.deployment(deployment, since)["events"]
    return [e for e in events if e["kind"] == "progress"]


def test_a_pipeline_that_raises_fails_its_own_deployment_and_the_others_keep_committing(
    engine, broker
):  # type: ignore[no-untyped-def]
    settings, _ = engine
    client = EngineClient(settings.home)
    send(settings, customer_changes(600, seed=3))
    send(settings, transactions(300, seed=3))
    client.submit("customers", "a1", FAST, "run-customers")
    client.submit("boom", "v1", FAST, "run-boom")
    boom = {
        "txn_id": "boom",
        "customer_id": "k00007",
        "amount": 1,
        "currency": "EUR",
        "country": "DE",
        "ts": 1_700_000_000_000 + 10**6,  # the latest time: never late
    }
    send(settings, [Out("transactions", b"k00007", json.dumps(boom).encode())])

    def failed() -> bool:
        return client.deployment("boom__v1")["state"] == "failed"

    assert wait_until(failed, timeout_s=120), [
        (d["id"], d["state"], d["error"]) for d in client.deployments()
    ]
    assert "a transaction named boom" in client.deployment("boom__v1")["error"]
    # The other deployment is untouched: it goes on reading what arrives after the failure.
    send(settings, customer_changes(400, seed=4))
    assert client.deployment("customers__a1")["state"] == "running"
    total = sum(
        sum(p.values())
        for p in log_ends(replay(settings.kafka.bootstrap_servers, "customers")).values()
    )
    _customers(settings, "a1", total, keep=lambda row: True)
    # Idle: with no new record, trigger after trigger starts no batch (no Spark job).
    idle_from = client.deployment("customers__a1")["next"]
    assert wait_until(lambda: len(_progress(client, "customers__a1", idle_from)) >= 4, 30)
    idle = _progress(client, "customers__a1", idle_from)
    assert {e["batches"] for e in idle} == {idle[0]["batches"]}, idle
    assert {e["total_lag"] for e in idle} == {0}
    client.stop("customers__a1")
    assert wait_until(lambda: client.deployment("customers__a1")["state"] == "stopped", 60)


def test_two_versions_with_different_code_run_side_by_side(engine, broker):  # type: ignore[no-untyped-def]
    settings, package = engine
    client = EngineClient(settings.home)
    send(settings, customer_changes(800, seed=5))
    (package / "customers.py").write_text(customers_module("b1"))
    client.submit("customers", "b1", ALONE, "run-b1")
    assert wait_until(
        lambda: latest_commit(Deployment("customers", "b1", settings.home).table_path) is not None,
        120,
    )
    # The user changes the code and deploys it as b2; b1 keeps running the code it started with.
    (package / "customers.py").write_text(
        customers_module("b2", change='.where(pc.field("country") != "DE")')
    )
    client.submit("customers", "b2", ALONE, "run-b2")
    send(settings, customer_changes(300, seed=6))
    total = sum(
        sum(p.values())
        for p in log_ends(replay(settings.kafka.bootstrap_servers, "customers")).values()
    )
    _customers(settings, "b1", total, keep=lambda row: True)
    _customers(settings, "b2", total, keep=lambda row: row["country"] != "DE")
    for version in ("b1", "b2"):
        client.stop(f"customers__{version}")


def test_a_deployment_started_as_its_run_launches_is_taken_over_or_stopped(engine, broker):  # type: ignore[no-untyped-def]
    """The run launcher starts a deployment before its run's step exists (``claim_within_s``):
    the step takes it over, a run terminated before its step stops it, and one that no step takes
    over stops by itself."""
    from assets.run_launcher import RunDeployment, stop_untaken

    settings, package = engine
    client = EngineClient(settings.home)
    (package / "customers.py").write_text(customers_module("c2"))
    send(settings, customer_changes(300, seed=7))
    for version in ("c1", "c2", "c3"):
        view = client.submit("customers", version, ALONE, f"run-{version}", claim_within_s=4)
        assert view["claimed"] is False
    taken = client.submit("customers", "c2", ALONE, "run-c2")  # c2's step
    assert taken["claimed"] is True and taken["run_id"] == "run-c2"
    for version in ("c2", "c3"):  # both runs terminated; only c3 has no step to stop it
        stop_untaken(RunDeployment("customers", version, ALONE, settings), f"run-{version}")
    assert wait_until(lambda: client.deployment("customers__c3")["state"] == "stopped", 60)
    assert wait_until(lambda: client.deployment("customers__c1")["state"] == "stopped", 60)
    events = client.deployment("customers__c1")["events"]
    warnings = [e["message"] for e in events if e["kind"] == "warning"]
    assert any("no step of that run took it over within 4 s" in m for m in warnings), warnings
    # c2, taken over, outlived c1's window and reads on.
    assert client.deployment("customers__c2")["state"] == "running"
    total = sum(
        sum(p.values())
        for p in log_ends(replay(settings.kafka.bootstrap_servers, "customers")).values()
    )
    _customers(settings, "c2", total, keep=lambda row: True)
    client.stop("customers__c2")
