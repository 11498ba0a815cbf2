"""How a deployment's failures reach Dagster: a DATA LOSS stop (exit 3) fails the step at once,
with its cause and the log's tail, and is not retried (a crash would be)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from dagster import AssetCheckKey, AssetKey, DagsterEventType, DagsterInstance

from bench.support.broker import delete_topics
from bench.support.producing import send, transactions
from bench.support.reference import replay, spend_state
from bench.support.settings import private_settings
from streaming.engine.client import stop_engine
from streaming.settings import Settings
from tests.integration.helpers import table_rows
from tests.integration.materializing import materialize_table

pytestmark = [pytest.mark.integration, pytest.mark.slow(seconds=45)]


def test_data_loss_fails_the_step_with_cause_and_log_tail_and_is_not_retried(settings, broker):
    instance = DagsterInstance.ephemeral()
    send(settings, transactions(300, seed=60))
    assert materialize_table(settings, "customer_spend", instance=instance).success
    before = table_rows(settings, "customer_spend")
    assert before == spend_state(replay(settings.kafka.bootstrap_servers, "transactions"))

    delete_topics(settings.kafka.client_config(), ["transactions"])  # the log is gone
    send(settings, transactions(50, seed=61))  # the log now ends below the checkpoint
    result = materialize_table(settings, "customer_spend", instance=instance)

    assert not result.success
    types = [e.event_type for e in result.all_events]
    assert DagsterEventType.STEP_UP_FOR_RETRY not in types  # a crash would be retried
    [failure] = [e for e in result.all_events if e.is_step_failure]
    data = failure.step_failure_data
    assert data.user_failure_data is not None, data.error
    assert "stopped on DATA LOSS; not retrying" in data.user_failure_data.description
    metadata = {k: getattr(v, "value", v) for k, v in data.user_failure_data.metadata.items()}
    assert metadata["exit_code"] == 3
    assert "DATA LOSS" in metadata["log_tail"] and "transactions-" in metadata["log_tail"]
    assert table_rows(settings, "customer_spend") == before  # nothing was written


@pytest.fixture
def quick_retries(tmp_path: Path) -> Iterator[Settings]:
    """Settings with an eighth of a second between retries; the engine the first attempt starts
    (a child of this process) is stopped after the test."""
    settings = private_settings(tmp_path / "home", **{"dagster.retry_delay_s": 0.125})
    yield settings
    stop_engine(settings.home)


def test_a_crash_is_retried_with_backoff_then_fails_with_its_cause_and_log_tail(
    quick_retries: Settings,
):
    """No broker: every attempt exits at once (code 2), so only the retry schedule takes time."""
    instance = DagsterInstance.ephemeral()
    result = materialize_table(quick_retries, "customers", instance=instance)
    assert not result.success
    events = result.all_events
    retries = [e for e in events if e.event_type == DagsterEventType.STEP_UP_FOR_RETRY]
    # 5 retries, the n-th after retry_delay_s * (2**n - 1); eighths are exact in binary
    waits = [r.event_specific_data.seconds_to_wait for r in retries]
    assert waits == [0.125, 0.375, 0.875, 1.875, 3.875]
    restarts = [e for e in events if e.event_type == DagsterEventType.STEP_RESTARTED]
    assert len(restarts) == 5  # each retry did run the job again
    [failure] = [e for e in events if e.is_step_failure]
    final = failure.step_failure_data.user_failure_data
    assert final is not None
    assert "exited with code 2" in final.description  # the deployment, in the engine
    metadata = {k: getattr(v, "value", v) for k, v in final.metadata.items()}
    assert metadata["exit_code"] == 2
    assert "did not answer" in metadata["log_tail"]  # the cause, from the job's log
    # The failed deployment is not fresh: its version's freshness check turned red.
    freshness = AssetCheckKey(AssetKey(["tables", "customers"]), "freshness")
    history = instance.event_log_storage.get_asset_check_execution_history(freshness, limit=5)
    latest = next(r for r in history if r.partition == "v1" and r.event is not None)
    assert latest.event.dagster_event.event_specific_data.passed is False
