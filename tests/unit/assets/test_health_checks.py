"""A deployment that failed is not fresh: when its run fails, ``freshness`` turns red on its
version, and the check run on demand says so too; a lagging one turns ``lag`` red."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dagster import AssetCheckKey, AssetKey, AssetObservation, DagsterInstance

from assets.checks.health import FRESHNESS_CHECK, LAG_CHECK, fresh_ok, latest_health
from assets.outcome import report_state
from streaming.deployment import Deployment
from streaming.run.health import FAILED, LAGGING, RUNNING, STOPPED

KEY = AssetKey(["tables", "customers"])


@dataclass
class _Log:
    warnings: list[str] = field(default_factory=list)

    def warning(self, message: str) -> None:
        self.warnings.append(message)


@dataclass
class _Context:
    """What the launcher's report needs of the step's context."""

    instance: DagsterInstance
    log: _Log = field(default_factory=_Log)


@dataclass
class _Relay:
    """What the launcher's report needs of the relay: the run's last report, if any."""

    deployment: Deployment
    key: AssetKey = KEY
    last: Any = None
    last_metadata: dict[str, Any] | None = None


def _verdicts(instance: DagsterInstance, version: str) -> dict[str, bool]:
    """The latest evaluation of each health check on ``version``."""
    found = {}
    for check in (LAG_CHECK, FRESHNESS_CHECK):
        history = instance.event_log_storage.get_asset_check_execution_history(
            AssetCheckKey(KEY, check), limit=10
        )
        mine = [r for r in history if r.partition == version and r.event is not None]
        found[check] = mine[0].event.dagster_event.event_specific_data.passed  # newest first
    return found


def _report(instance: DagsterInstance, state: str) -> _Context:
    context = _Context(instance)
    relay = _Relay(Deployment("customers", "v1", "/tmp/kappa-home"))
    report_state(context, relay, state)  # type: ignore[arg-type]
    return context


def test_a_failed_deployment_turns_freshness_red() -> None:
    instance = DagsterInstance.ephemeral()

    context = _report(instance, FAILED)

    assert context.log.warnings == []
    assert _verdicts(instance, "v1") == {LAG_CHECK: True, FRESHNESS_CHECK: False}


def test_a_stopped_deployment_is_not_reported_stale() -> None:
    instance = DagsterInstance.ephemeral()

    _report(instance, STOPPED)

    assert _verdicts(instance, "v1") == {LAG_CHECK: True, FRESHNESS_CHECK: True}


def test_the_check_run_on_demand_judges_the_latest_report() -> None:
    instance = DagsterInstance.ephemeral()
    for state, fresh in ((RUNNING, True), (LAGGING, True), (FAILED, False)):
        event = AssetObservation(asset_key=KEY, partition="v1", metadata={"state": state})
        instance.report_runless_asset_event(event)
        latest = latest_health(instance, KEY, "v1")
        assert latest["state"] == state
        assert fresh_ok(str(latest["state"])) is fresh, state
