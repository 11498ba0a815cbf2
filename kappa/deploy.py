"""`kappa deploy`: launch a pipeline's streaming deployment in the running Dagster.

The same run the UI starts when a version's partition of the table is materialized (or
`deploy_<pipeline>` launched from the Launchpad): a Dagster run of the pipeline's deploy job on
the version's partition, with the launch config the Launchpad shows (``mode``, ``forward_only``
...). Dagster runs, watches and heals it from then on. A forward-only start the version's change
does not allow is refused here, before Dagster is asked.
"""

from __future__ import annotations

from typing import Any, get_args

from kappa.dagster_api import DagsterApi, RunInfo
from kappa.deployments import is_deployment_run, run_version
from kappa.errors import DagsterApiError, OperatorError
from streaming.dagster_names import (
    PARTITION_TAG,
    REASON_TAG,
    deploy_job_name,
    deploy_op_name,
    versions_partitions_name,
)
from streaming.define.names import validate_version
from streaming.define.registry import get_pipeline
from streaming.run.options import LaunchOptions
from streaming.settings import Settings
from streaming.versions.change import forward_only_refusal

MODES: tuple[str, ...] = get_args(LaunchOptions.model_fields["mode"].annotation)


def run_config(pipeline: str, launch: dict[str, Any]) -> dict[str, Any]:
    """The run config of a deploy job: the table step's launch options."""
    return {"ops": {deploy_op_name(pipeline): {"config": launch}}}


def launch(
    settings: Settings,
    pipeline: str,
    version: str,
    config: dict[str, Any],
    tags: dict[str, str],
) -> str:
    """Submit a run of ``pipeline``'s deploy job on the version's partition (added first, as the
    UI's launch dialog does); returns its run id."""
    from dagster_graphql import DagsterGraphQLClient, DagsterGraphQLClientError

    try:
        partitions = versions_partitions_name(pipeline)
        location, repository = DagsterApi(settings).add_partition(partitions, version)
        client = DagsterGraphQLClient(settings.dagster.host, port_number=settings.dagster.port)
        # Naming the repository spares the client its own lookup of the job's repository.
        return client.submit_job_execution(
            deploy_job_name(pipeline),
            repository_location_name=location,
            repository_name=repository,
            run_config=config,
            tags={**tags, PARTITION_TAG: version},
        )
    except DagsterGraphQLClientError as exc:
        msg = f"Dagster refused to launch {deploy_job_name(pipeline)}: {exc}"
        raise DagsterApiError(msg) from None
    except DagsterApiError:
        raise
    except Exception as exc:  # connection refused, timeouts: the platform is not up
        msg = (
            f"the Dagster UI at {settings.dagster.host}:{settings.dagster.port} is not reachable "
            f"({exc.__class__.__name__}); start the platform with `make run` (or `kappa up`)"
        )
        raise DagsterApiError(msg) from None


def active_run_of(api: DagsterApi, pipeline: str, version: str) -> RunInfo | None:
    """The active run of (pipeline, version), if any: a deployment run on the version's
    partition."""
    for run in api.active_runs():
        if is_deployment_run(run, pipeline) and run_version(run) == version:
            return run
    return None


def deploy(
    settings: Settings,
    pipeline: str,
    version: str | None,
    mode: str,
    forward_only: bool = False,
) -> tuple[str, str]:
    """Launch (pipeline, version) unless it runs already; returns (run id, version).
    ``forward_only``: start it from the live version's table and state, refused here, before
    anything is launched or written, unless its change from the live version allows it.

    Raises:
        KappaError: unknown pipeline, bad version or mode, a forward-only start the change does
            not allow, the deployment runs already, or Dagster is down.
    """
    declared = get_pipeline(settings.pipelines, pipeline)
    chosen = validate_version(version or declared.version)
    if mode not in MODES:
        msg = f"mode {mode!r} is invalid: use one of {', '.join(MODES)}"
        raise OperatorError(msg)
    refusal = forward_only_refusal(settings, declared, chosen) if forward_only else ""
    if refusal:
        raise OperatorError(refusal)
    running = active_run_of(DagsterApi(settings), pipeline, chosen)
    if running is not None:
        msg = (
            f"{pipeline} {chosen} is already running (run {running.run_id}); "
            f"`kappa stop {pipeline}` first"
        )
        raise OperatorError(msg)
    tags = {REASON_TAG: "kappa deploy"}
    launch_options: dict[str, Any] = {"mode": mode}
    if forward_only:
        launch_options["forward_only"] = True
    config = run_config(pipeline, launch_options)
    return launch(settings, pipeline, chosen, config, tags), chosen
