"""A deployment's run launches as it is submitted; every other run waits in Dagster's queue
(``assets.run_coordinator``), on a real Dagster instance with the platform's coordinator settings
and a launcher that only records launches."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import yaml
from dagster import AssetKey, DagsterInstance, DagsterRunStatus
from dagster._core.remote_origin import (
    RegisteredCodeLocationOrigin,
    RemoteJobOrigin,
    RemoteRepositoryOrigin,
)
from dagster._core.run_coordinator.base import SubmitRunContext
from dagster._core.test_utils import create_run_for_test, instance_for_test

from streaming.settings import REPO_ROOT

DEPLOY = {"kappa/kind": "deployment", "kappa/pipeline": "customers", "dagster/partition": "v1"}


@pytest.fixture
def instance() -> Iterator[DagsterInstance]:
    platform = yaml.safe_load((REPO_ROOT / "platform" / "dagster.yaml").read_text())
    overrides = {
        "run_coordinator": platform["run_coordinator"],
        "run_launcher": {"module": "dagster._core.test_utils", "class": "MockedRunLauncher"},
    }
    with instance_for_test(overrides=overrides) as instance:
        yield instance


def _submit(instance: DagsterInstance, job_name: str, **run: object) -> DagsterRunStatus:
    repository = RemoteRepositoryOrigin(RegisteredCodeLocationOrigin("kappa"), "__repository__")
    origin = RemoteJobOrigin(repository_origin=repository, job_name=job_name)
    created = create_run_for_test(instance, job_name=job_name, remote_job_origin=origin, **run)  # type: ignore[arg-type]
    submitted = instance.run_coordinator.submit_run(SubmitRunContext(created, workspace=None))  # type: ignore[arg-type]
    return submitted.status


def test_a_deploy_jobs_run_and_an_asset_pages_run_of_a_table_launch_at_once(instance):  # type: ignore[no-untyped-def]
    assert _submit(instance, job_name="deploy_customers", tags=DEPLOY) == DagsterRunStatus.STARTING
    page = {AssetKey(["tables", "customers"])}
    status = _submit(
        instance, job_name="__ASSET_JOB", tags={"dagster/partition": "v2"}, asset_selection=page
    )
    assert status == DagsterRunStatus.STARTING
    launched = [run.job_name for run in instance.run_launcher.queue()]  # type: ignore[attr-defined]
    assert launched == ["deploy_customers", "__ASSET_JOB"]


def test_batch_runs_wait_in_the_queue(instance):  # type: ignore[no-untyped-def]
    batch = {"kappa/kind": "batch", "kappa/pipeline": "customers"}
    assert _submit(instance, job_name="quality_customers", tags=batch) == DagsterRunStatus.QUEUED
    two = {AssetKey(["tables", "customers"]), AssetKey(["kafka", "customers"])}
    assert _submit(instance, job_name="__ASSET_JOB", asset_selection=two) == DagsterRunStatus.QUEUED
    assert instance.run_launcher.queue() == []  # type: ignore[attr-defined]
