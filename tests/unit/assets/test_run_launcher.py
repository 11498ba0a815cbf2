"""Which deployment a launched run starts in the engine ahead of its step (``assets.run_launcher``):
a deploy job's run and an asset page's run of one table are read as their step reads them; any
other run, or one whose config the step will refuse, starts nothing early. A deployment's launch
goes on in the background and ends its run when nothing else will: canceled when it was
terminated meanwhile, failed when its process cannot start (on a real Dagster instance)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dagster import AssetKey, DagsterRun, DagsterRunStatus
from dagster._core.launcher.base import LaunchRunContext
from dagster._core.test_utils import create_run_for_test, instance_for_test

from assets.run_launcher import RunDeployment
from streaming.wait import wait_until


def _run(tmp_path: Path, tags: dict[str, str], config: dict[str, Any] | None = None, **more: Any):  # type: ignore[no-untyped-def]
    run_config = {
        "ops": {"tables__customers": {"config": config or {}}},
        "resources": {"kappa": {"config": {"home": str(tmp_path / "home")}}},
    }
    return DagsterRun(
        job_name="deploy_customers", run_id="r1", tags=tags, run_config=run_config, **more
    )


DEPLOY = {"kappa/kind": "deployment", "kappa/pipeline": "customers", "dagster/partition": "v2"}


def test_a_deploy_jobs_run_is_its_pipeline_at_its_partition_with_its_launch_config(tmp_path):  # type: ignore[no-untyped-def]
    deployment = RunDeployment.of(_run(tmp_path, DEPLOY, {"mode": "until_caught_up"}))
    assert deployment is not None
    assert (deployment.id, deployment.options["mode"]) == ("customers__v2", "until_caught_up")
    assert deployment.settings.home.root == tmp_path / "home"


def test_an_asset_pages_run_of_one_table_is_that_tables_deployment(tmp_path):  # type: ignore[no-untyped-def]
    selection = {AssetKey(["tables", "customers"])}
    run = _run(tmp_path, {"dagster/partition": "v3"}, asset_selection=selection)
    deployment = RunDeployment.of(run)
    assert deployment is not None and deployment.id == "customers__v3"
    assert deployment.options["mode"] == "continuous"


def test_other_runs_and_refused_configs_start_nothing_early(tmp_path):  # type: ignore[no-untyped-def]
    batch = {**DEPLOY, "kappa/kind": "batch"}
    unpartitioned = {k: v for k, v in DEPLOY.items() if k != "dagster/partition"}
    two_assets = {AssetKey(["tables", "customers"]), AssetKey(["kafka", "customers"])}
    assert RunDeployment.of(_run(tmp_path, batch)) is None
    assert RunDeployment.of(_run(tmp_path, unpartitioned)) is None
    assert (
        RunDeployment.of(_run(tmp_path, {"dagster/partition": "v1"}, asset_selection=two_assets))
        is None
    )
    assert RunDeployment.of(_run(tmp_path, DEPLOY, {"trigger_interval_s": 1})) is None


def _launched_status(status: DagsterRunStatus) -> DagsterRunStatus:
    """Launch a deployment's run found in ``status`` with the platform's launcher (no engine,
    no code location), and return the status it settles in."""
    overrides = {"run_launcher": {"module": "assets.run_launcher", "class": "KappaRunLauncher"}}
    tags = {"kappa/kind": "deployment", "kappa/pipeline": "customers"}
    with instance_for_test(overrides=overrides) as instance:
        run = create_run_for_test(instance, job_name="deploy_customers", tags=tags, status=status)
        instance.run_launcher.launch_run(LaunchRunContext(dagster_run=run, workspace=None))
        settled = lambda: instance.get_run_by_id(run.run_id).status != status  # noqa: E731
        assert wait_until(settled, 30), f"the run stayed {status}"
        return instance.get_run_by_id(run.run_id).status  # type: ignore[union-attr]


def test_a_run_terminated_while_its_deployment_started_is_canceled_without_a_process():  # type: ignore[no-untyped-def]
    assert _launched_status(DagsterRunStatus.CANCELING) == DagsterRunStatus.CANCELED


def test_a_run_whose_process_cannot_start_fails():  # type: ignore[no-untyped-def]
    assert _launched_status(DagsterRunStatus.STARTING) == DagsterRunStatus.FAILURE
