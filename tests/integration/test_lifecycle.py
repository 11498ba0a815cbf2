"""Continuous deployments driven through a real Dagster webserver and daemon over GraphQL."""

from __future__ import annotations

import pytest

from bench.support.producing import send, transactions
from bench.support.reference import replay, spend_state, table_state
from kappa.deployments import deployment_statuses, latest_event
from quality.report import load_result
from streaming.dagster_names import PARTITION_TAG
from streaming.delta.table_reader import read_arrow
from streaming.deployment import Deployment
from streaming.engine.client import EngineClient
from streaming.wait import wait_until
from tests.integration.dagster_platform import running_platform

pytestmark = [pytest.mark.integration, pytest.mark.slow(seconds=60)]

FAST = {"mode": "continuous", "trigger_interval": "0.5 seconds", "report_every_s": 2.0}


@pytest.fixture(scope="module")
def platform(tmp_path_factory, shared_broker):  # type: ignore[no-untyped-def]
    # The one platform test that keeps the quality sensor's own suite runs on (and checks one).
    home = tmp_path_factory.mktemp("lifecycle")
    with running_platform(home, shared_broker, **{"quality.auto": True}) as running:
        yield running


def _spend(platform) -> dict:  # type: ignore[no-untyped-def]
    path = Deployment("customer_spend", "v1", platform.settings.home).table_path
    try:
        return table_state(read_arrow(path).to_pylist(), "customer_id")
    except FileNotFoundError:
        return {}


def _txn_total(platform) -> int:  # type: ignore[no-untyped-def]
    return sum(r["txn_count"] for r in _spend(platform).values())


def _stop_record(platform, pipeline: str) -> dict:  # type: ignore[no-untyped-def]
    """The state and exit code the launcher recorded when the deployment's run ended."""
    event = latest_event(platform.api, pipeline)
    assert event is not None
    values = {m["label"]: m.get("intValue", m.get("text")) for m in event["metadataEntries"]}
    return {"state": values.get("state"), "exit_code": values.get("exit_code")}


def test_launch_watch_stop_relaunch_without_loss(platform):
    settings = platform.settings
    send(settings, transactions(1000, seed=20))
    run_id = platform.launch("customer_spend", **FAST)
    platform.wait_status(run_id, {"STARTED"}, timeout_s=60)
    assert wait_until(lambda: _txn_total(platform) == 1000, timeout_s=120, interval_s=0.5)

    # events produced while it runs reach the table and the observations (the run's count
    # covers both sends)
    send(settings, transactions(1500, seed=21))
    assert wait_until(lambda: _txn_total(platform) == 2500, timeout_s=60, interval_s=0.5)
    assert wait_until(
        lambda: (
            (e := latest_event(platform.api, "customer_spend")) is not None
            and any(
                m["label"] == "records_processed" and m.get("text") == "2500"
                for m in e["metadataEntries"]
            )
        ),
        timeout_s=30,
        interval_s=0.5,
    )
    [status] = deployment_statuses(platform.api, ["customer_spend"])
    assert status.status in ("running", "catching_up") and status.run_id == run_id
    assert (status.version, status.role) == ("v1", "live")
    assert status.rows == len(_spend(platform))

    # a second launch does not start a second copy
    pid = platform.holder_pid("customer_spend")
    duplicate = platform.launch("customer_spend", **FAST)
    platform.wait_status(duplicate, {"SUCCESS"}, timeout_s=90)
    assert platform.holder_pid("customer_spend") == pid
    assert platform.status(run_id) == "STARTED"

    # Terminating the run stops the deployment at a batch boundary within 30 s: its lock is
    # free; the engine that ran it (the lock's holder) keeps serving the platform.
    engine = EngineClient(settings.home)
    assert pid == engine.address().pid
    platform.client.terminate_run(run_id)
    platform.wait_status(run_id, {"CANCELED"}, timeout_s=30)
    assert wait_until(lambda: platform.holder_pid("customer_spend") is None, 30, 0.2)
    assert engine.deployment("customer_spend__v1")["state"] == "stopped"
    assert engine.answers()
    # It stopped by itself at a batch boundary (exit 0), not by the SIGKILL that follows 25 s
    # of ignoring SIGINT.
    assert _stop_record(platform, "customer_spend") == {"state": "stopped", "exit_code": 0}

    # more events while stopped; the relaunch resumes from the checkpoint
    send(settings, transactions(700, seed=22))
    run_id = platform.launch("customer_spend", **FAST)
    assert wait_until(lambda: _txn_total(platform) == 3200, timeout_s=120, interval_s=0.5)
    expected = spend_state(replay(settings.kafka.bootstrap_servers, "transactions"))
    assert _spend(platform) == expected
    # (the table fills as the run launches, before its process is up; Dagster terminates started
    # runs only)
    platform.wait_status(run_id, {"STARTED"}, timeout_s=120)
    platform.client.terminate_run(run_id)
    platform.wait_status(run_id, {"CANCELED"}, timeout_s=30)

    # Meanwhile the quality sensor ran the running version's suite by itself, and it passed.
    assert wait_until(lambda: "SUCCESS" in _suite_runs(platform), timeout_s=180, interval_s=1), (
        _suite_runs(platform)
    )
    result = load_result(Deployment("customer_spend", "v1", settings.home).validation_path)
    assert result.success and result.row_count > 0, result


def _suite_runs(platform) -> list[str]:  # type: ignore[no-untyped-def]
    """The statuses of the sensor's suite runs of customer_spend v1."""
    return [
        r.status
        for r in platform.api.runs()
        if r.job_name == "quality_customer_spend" and r.tags.get(PARTITION_TAG) == "v1"
    ]
