"""A candidate's comparison verdict is found per version (partition); a run that deploys the table
is recognised as one that must not compare, and settles the comparison checks it planned: passed
with the reason on the live version, the last verdict carried over on a candidate."""

from __future__ import annotations

import logging
import time
from types import SimpleNamespace

from dagster import (
    AssetCheckEvaluation,
    AssetCheckKey,
    AssetCheckSeverity,
    AssetKey,
    DagsterInstance,
)
from dagster._core.events import DagsterEvent, DagsterEventType
from dagster._core.events.log import EventLogEntry
from dagster._core.utils import make_new_run_id

from assets.checks.comparison import (
    CARRIED,
    deploys_the_table,
    last_verdict,
    settled_gate_evaluations,
)
from streaming.deployment import Deployment
from streaming.versions.live_pointer import claim_first

TABLE = AssetKey(["tables", "customers"])
VALUES = AssetCheckKey(TABLE, "candidate_values")


def _report(instance: DagsterInstance, version: str, passed: bool, description: str) -> None:
    """One promotion run's evaluation on the version's partition, as the run stores it."""
    evaluation = AssetCheckEvaluation(
        asset_key=TABLE,
        check_name=VALUES.name,
        passed=passed,
        severity=AssetCheckSeverity.ERROR,
        description=description,
        metadata={"name_match_rate": 0.0},
        blocking=True,
        partition=version,
    )
    event = DagsterEvent(
        event_type_value=DagsterEventType.ASSET_CHECK_EVALUATION.value,
        job_name="promote_version",
        event_specific_data=evaluation,
    )
    instance.store_event(
        EventLogEntry(
            error_info=None,
            level=logging.INFO,
            user_message="",
            run_id=make_new_run_id(),
            timestamp=time.time(),
            dagster_event=event,
            job_name="promote_version",
        )
    )


def test_the_last_verdict_is_the_versions_own_latest_one():
    with DagsterInstance.ephemeral() as instance:
        assert last_verdict(instance, VALUES, "v2") is None
        _report(instance, "v2", True, "first comparison passed")
        _report(instance, "v2", False, "column name matches for 0.0% of keys")
        _report(instance, "v3", True, "v3 passed")

        v2 = last_verdict(instance, VALUES, "v2")
        assert v2 is not None
        assert (v2.passed, v2.description) == (False, "column name matches for 0.0% of keys")
        assert v2.metadata["name_match_rate"].value == 0.0
        v3 = last_verdict(instance, VALUES, "v3")
        assert v3 is not None and v3.passed
        assert last_verdict(instance, VALUES, "v4") is None


def test_only_a_run_that_materializes_the_table_is_a_deployment():
    assert deploys_the_table({TABLE}, TABLE)
    assert deploys_the_table({TABLE, AssetKey(["kafka", "customers"])}, TABLE)
    assert not deploys_the_table(None, TABLE)  # a check-only run (Execute on the checks)
    assert not deploys_the_table(set(), TABLE)
    assert not deploys_the_table({AssetKey(["tables", "customer_spend"])}, TABLE)


def test_a_deployment_run_settles_its_planned_checks_without_comparing(settings):
    claim_first(settings.home, "customers", "v1", "first deployment")
    names = ["candidate_values"]
    with DagsterInstance.ephemeral() as instance:
        context = SimpleNamespace(instance=instance, asset_key=TABLE)

        def settle(version: str) -> list[AssetCheckEvaluation]:
            deployment = Deployment("customers", version, settings.home)
            return settled_gate_evaluations(context, settings, deployment, names)  # type: ignore[arg-type]

        [live] = settle("v1")
        assert live.passed and live.partition == "v1"
        assert "v1 is live, not a candidate" in (live.description or "")

        assert settle("v2") == []  # a candidate never compared: its checks wait for a comparison
        _report(instance, "v2", False, "column name matches for 0.0% of keys")
        [kept] = settle("v2")
        assert not kept.passed and kept.partition == "v2"
        assert kept.description == "column name matches for 0.0% of keys" + CARRIED
        assert kept.metadata["name_match_rate"].value == 0.0
        # carried over again (a later deployment run), it says so once
        _report(instance, "v2", kept.passed, kept.description or "")
        [again] = settle("v2")
        assert again.description == kept.description
