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

from streaming.delta.table_reader import latest_commit, read_arrow
from streaming.deployment import Deployment
from streaming.engine.client import EngineClient, ensure_engine, stop_engine
from streaming.kafka.offsets import from_spark
from streaming.run.options import RunOptions
from streaming.settings import Settings
from streaming.wait import wait_until
from tests.integration.user_code import customers_module, user_package
from tests.support.producing import Out, customer_changes, send
from tests.support.reference import customers_state, log_ends, replay
from tests.support.settings import private_settings

pytestmark = pytest.mark.integration

# A stateful function that raises on one record: a bug in a user's pipeline.
_BOOM = '''"""boom: customers through a function that raises on a customer named boom."""
from pipelines.topics import CUSTOMERS
from streaming.define import Pipeline, stateful


@stateful(by="customer_id", key="customer_id", emits="customer_id string, name string")
def check(record, state):
    if record["name"] == "boom":
        raise ValueError("a customer named boom")
    return {"customer_id": record["customer_id"], "name": record["name"]}


PIPELINE = Pipeline(name="boom", version="v1", plan=CUSTOMERS.stream().process(check))
'''

FAST = RunOptions(trigger_interval="0.5 seconds", report_every_s=1.0).model_dump()


@pytest.fixture(scope="module")
def engine(tmp_path_factory, shared_broker) -> Iterator[tuple[Settings, Path]]:  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("engine")
    with user_package(root, "engine_user", customers_module("v1")) as package:
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

    assert wait_until(read_all, timeout_s=120), f"customers {version} did not catch up"
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


def test_a_pipeline_that_raises_fails_its_own_deployment_and_the_others_keep_committing(
    engine, broker
):  # type: ignore[no-untyped-def]
    settings, _ = engine
    client = EngineClient(settings.home)
    send(settings, customer_changes(600, seed=3))
    client.submit("customers", "v1", FAST, "run-customers")
    client.submit("boom", "v1", FAST, "run-boom")
    boom = {
        "customer_id": "k00007",
        "name": "boom",
        "email": "b@example.com",
        "country": "DE",
        "updated_at": 1_700_000_100_000,
    }
    send(settings, [Out("customers", b"k00007", json.dumps(boom).encode())])

    def failed() -> bool:
        return client.deployment("boom__v1")["state"] == "failed"

    assert wait_until(failed, timeout_s=120)
    assert "a customer named boom" in client.deployment("boom__v1")["error"]
    # The other deployment is untouched: it goes on reading what arrives after the failure.
    send(settings, customer_changes(400, seed=4))
    assert client.deployment("customers__v1")["state"] == "running"
    total = sum(
        sum(p.values())
        for p in log_ends(replay(settings.kafka.bootstrap_servers, "customers")).values()
    )
    _customers(settings, "v1", total, keep=lambda row: True)
    client.stop("customers__v1")
    assert wait_until(lambda: client.deployment("customers__v1")["state"] == "stopped", 60)


def test_two_versions_with_different_code_run_side_by_side(engine, broker):  # type: ignore[no-untyped-def]
    settings, package = engine
    client = EngineClient(settings.home)
    send(settings, customer_changes(800, seed=5))
    client.submit("customers", "v1", FAST, "run-v1")
    assert wait_until(
        lambda: latest_commit(Deployment("customers", "v1", settings.home).table_path) is not None,
        120,
    )
    # The user changes the code and deploys it as v2; v1 keeps running the code it was started with.
    (package / "customers.py").write_text(
        customers_module("v2", change='.where(pc.field("country") != "DE")')
    )
    client.submit("customers", "v2", FAST, "run-v2")
    send(settings, customer_changes(300, seed=6))
    total = sum(
        sum(p.values())
        for p in log_ends(replay(settings.kafka.bootstrap_servers, "customers")).values()
    )
    _customers(settings, "v1", total, keep=lambda row: True)
    _customers(settings, "v2", total, keep=lambda row: row["country"] != "DE")
    for version in ("v1", "v2"):
        client.stop(f"customers__{version}")
