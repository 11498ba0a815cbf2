"""What the sensors ask Dagster for, evaluated with ``build_sensor_context`` on a real platform
home (Delta tables, live pointer, deployment locks) and a real broker: every version a partition
of its table, the declared version launched on its partition, a running version's quality suite
on its cadence."""

from __future__ import annotations

import dataclasses
import os
import uuid

import pyarrow.compute as pc
import pytest
from dagster import DagsterInstance, DagsterRun, DagsterRunStatus, build_sensor_context

import assets.versions.sensors as version_sensors
from assets.definitions import defs
from assets.resources import KappaSettings
from bench.support.producing import customer_changes, send
from streaming.define.registry import get_pipeline, registry
from streaming.deployment import Deployment
from streaming.deployment.code_pin import pinned_pipeline
from streaming.deployment.lock import DeploymentLock
from streaming.versions.live_pointer import claim_first, switch
from streaming.versions.overview import overview
from tests.integration.helpers import commit_customers

pytestmark = pytest.mark.integration


@pytest.fixture
def env(settings, monkeypatch):  # type: ignore[no-untyped-def]
    """The sensors load the settings from the environment, as in the code location."""
    for key, value in settings.to_env().items():
        monkeypatch.setenv(key, value)
    return {"kappa": KappaSettings(home=str(settings.home))}


def _validation_written(settings, deployment: Deployment):  # type: ignore[no-untyped-def]
    """A suite result for the deployment, as a quality run leaves it (its mtime is the run's)."""
    result = deployment.validation_path
    result.parent.mkdir(parents=True, exist_ok=True)
    result.write_text("{}")
    return result


def _sensor(name: str):  # type: ignore[no-untyped-def]
    return defs().resolve_sensor_def(name)


def test_versions_become_partitions_and_the_declared_one_runs_on_its_own(
    settings, broker, env, monkeypatch
):
    instance = DagsterInstance.ephemeral()
    sensor = _sensor("new_version_sensor")
    first = sensor(build_sensor_context(instance=instance, resources=env))
    added = {r.partitions_def_name: r.partition_keys for r in first.dynamic_partitions_requests}
    # every registered pipeline's declared version becomes a partition of its table
    declared = registry(settings.pipelines).items()
    assert added == {f"{name}_versions": [pipeline.version] for name, pipeline in declared}
    assert first.run_requests == []  # nothing is live yet: v1 is launched from the asset page
    for name, keys in added.items():
        instance.add_dynamic_partitions(name, keys)

    send(settings, customer_changes(20, seed=3))
    commit_customers(settings, "v1", {0: 1})
    claim_first(settings.home, "customers", "v1", "first deployment")
    v1 = get_pipeline(settings.pipelines, "customers")
    monkeypatch.setitem(
        registry(settings.pipelines), "customers", dataclasses.replace(v1, version="v2")
    )
    result = sensor(build_sensor_context(instance=instance, resources=env))
    [added] = result.dynamic_partitions_requests
    assert (added.partitions_def_name, added.partition_keys) == ("customers_versions", ["v2"])
    [request] = result.run_requests
    assert (request.job_name, request.partition_key) == ("deploy_customers", "v2")
    assert request.run_config["ops"]["tables__customers"]["config"] == {
        "starting_offsets": "earliest"
    }
    assert request.tags["kappa/role"] == "candidate"
    assert "differs from live v1" in request.tags["kappa/reason"]


def test_a_running_version_is_validated_once_committed_then_on_its_cadence(
    settings, env, monkeypatch
):
    sensor = _sensor("quality_sensor")
    instance = DagsterInstance.ephemeral()

    def tick(cursor: str | None = None):  # type: ignore[no-untyped-def]
        return sensor(build_sensor_context(instance=instance, resources=env, cursor=cursor))

    deployment = Deployment("customers", "v2", settings.home)
    lock = DeploymentLock(deployment.lock_path)
    lock.acquire(deployment.id, run_id="run-1")
    try:
        assert tick().run_requests == []  # running, but nothing committed to validate yet
        commit_customers(settings, "v2", {0: 1})
        due = tick()
        [request] = due.run_requests
        assert request.job_name == "quality_customers"
        assert request.tags["dagster/partition"] == "v2"
        assert tick(due.cursor).run_requests == []  # launched: not again before the cadence

        result = _validation_written(settings, deployment)
        assert tick().run_requests == []  # validated since the deployment started
        os.utime(result, (0, 0))  # validated long ago (and before this deployment started)
        assert [r.tags["dagster/partition"] for r in tick().run_requests] == ["v2"]
    finally:
        lock.release()
    assert tick().run_requests == []  # a version that is not running is not validated


def test_the_suite_cadence_and_switch_come_from_the_settings(settings, env, monkeypatch):
    sensor = _sensor("quality_sensor")
    instance = DagsterInstance.ephemeral()

    def tick():  # type: ignore[no-untyped-def]
        return sensor(build_sensor_context(instance=instance, resources=env))

    deployment = Deployment("customers", "v1", settings.home)
    lock = DeploymentLock(deployment.lock_path)
    lock.acquire(deployment.id, run_id="run-1")
    try:
        commit_customers(settings, "v1", {0: 1})
        result = _validation_written(settings, deployment)
        started = lock.holder()["started_at"]  # type: ignore[index]
        os.utime(result, (started, started))  # validated as the deployment started
        assert tick().run_requests == []  # not due again before the default 600 s
        monkeypatch.setenv("KAPPA_QUALITY_EVERY_S", "0.001")
        assert [r.tags["dagster/partition"] for r in tick().run_requests] == ["v1"]

        os.utime(result, (0, 0))  # due whatever the cadence, but automatic runs are off
        monkeypatch.setenv("KAPPA_QUALITY_AUTO", "false")
        off = tick()
        assert off.run_requests == []
        assert off.skip_reason is not None and "quality.auto" in off.skip_reason.skip_message
    finally:
        lock.release()


def test_a_rollback_landing_mid_evaluation_does_not_promote_the_candidate_again(
    settings, broker, env, monkeypatch
):
    """v2 passed its comparison against v1 and was promoted; the user rolls back to v1 while the
    candidate sensor evaluates. The sensor must find that comparison (tagged with live v1) and
    leave v1 live, not compare and auto-promote v2 again."""
    instance = DagsterInstance.ephemeral()
    sensor = _sensor("candidate_sensor")
    claim_first(settings.home, "customers", "v1", "first deployment")
    v1 = get_pipeline(settings.pipelines, "customers")
    monkeypatch.setitem(
        registry(settings.pipelines),
        "customers",
        dataclasses.replace(v1, version="v2", promotion="auto"),
    )
    commit_customers(settings, "v1", {0: 400, 1: 400})
    commit_customers(settings, "v2", {0: 400, 1: 400})
    [request] = [
        r
        for r in sensor(build_sensor_context(instance=instance, resources=env)).run_requests
        if r.tags["kappa/pipeline"] == "customers"
    ]
    assert (request.tags["kappa/version"], request.tags["kappa/live"]) == ("v2", "v1")
    instance.add_run(
        DagsterRun(
            job_name=request.job_name,
            run_id=str(uuid.uuid4()),
            status=DagsterRunStatus.SUCCESS,
            tags=request.tags,
        )
    )
    switch(settings.home, "customers", "v2", "promote")

    def overview_then_rollback(settings, name, change=None):  # type: ignore[no-untyped-def]
        view = overview(settings, name, change)  # the sensor has read the versions: v2 is live
        if name == "customers":
            switch(settings.home, name, "v1", "rollback")
        return view

    monkeypatch.setattr(version_sensors, "overview", overview_then_rollback)
    result = sensor(build_sensor_context(instance=instance, resources=env))
    assert [r for r in result.run_requests if r.tags["kappa/pipeline"] == "customers"] == []


def test_the_declared_versions_change_is_reported_on_its_partition(
    settings, broker, env, monkeypatch
):
    instance = DagsterInstance.ephemeral()
    send(settings, customer_changes(20, seed=4))
    commit_customers(settings, "v1", {0: 1})
    claim_first(settings.home, "customers", "v1", "first deployment")
    v1 = get_pipeline(settings.pipelines, "customers")
    pinned_pipeline(settings.home, v1, "v1")  # the live version's code, as its first start pins it
    v2 = dataclasses.replace(v1, version="v2", plan=v1.plan.where(pc.field("country") != "XX"))
    monkeypatch.setitem(registry(settings.pipelines), "customers", v2)
    instance.add_dynamic_partitions("customers_versions", ["v1", "v2"])
    sensor = _sensor("new_version_sensor")

    result = sensor(build_sensor_context(instance=instance, resources=env))
    [event] = [e for e in result.asset_events if e.partition == "v2"]
    shown = {k: getattr(v, "value", v) for k, v in event.metadata.items()}
    assert shown["change_category"] == "output"
    assert shown["change_from_live"] == "v1 -> v2: output"
    assert 'the filter None -> (country != "XX")' in shown["change_reasons"]
    assert shown["forward_only_allowed"] is True
    assert shown["full_replay_estimate_s"] >= 0 and shown["forward_only_estimate_s"] >= 0
    again = sensor(build_sensor_context(instance=instance, resources=env, cursor=result.cursor))
    assert again.asset_events == []  # the same change is not reported again

    candidates = _sensor("candidate_sensor")(build_sensor_context(instance=instance, resources=env))
    [view] = [e for e in candidates.asset_events if e.partition == "v1"]
    assert view.metadata["declared_change"].value.startswith("output: the filter")
