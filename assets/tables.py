"""One Dagster asset per streaming pipeline: materializing it runs the pipeline's deployment.

By default the deployment is continuous: the run lives as long as the streaming query and
reports health every few seconds. The job runs as a subprocess and reports back through Dagster
Pipes (``assets.launcher``); Dagster never touches the data.
"""

# No `from __future__ import annotations` here: Dagster reads these annotations at definition time.

import sys
from typing import TYPE_CHECKING

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    AssetSelection,
    Backoff,
    Config,
    Failure,
    RetryPolicy,
    asset,
    define_asset_job,
)
from pydantic import Field

from assets.launcher import run_deployment
from assets.names import PIPELINE_TAG, VERSION_TAG, deploy_job_name, table_key_path
from assets.resources import KappaSettings
from assets.topics import topic_key
from streaming.define.names import validate_version
from streaming.define.pipeline import Pipeline
from streaming.errors import InvalidNameError
from streaming.run.deployment import Deployment
from streaming.run.options import LaunchOptions, to_flags

if TYPE_CHECKING:  # not exported by dagster itself
    from dagster._core.definitions.unresolved_asset_job_definition import (
        UnresolvedAssetJobDefinition,
    )


# A crashed streaming process is restarted by step retries (same run, resumes from the
# checkpoint), after the last one the run fails with the cause. Dagster's exponential backoff
# waits delay * (2**n - 1) before retry n: 5, 15, 35, 75 and 155 s with the default 5 s.
CRASH_RETRIES = 5


def crash_retries(delay_s: float) -> RetryPolicy:
    return RetryPolicy(max_retries=CRASH_RETRIES, delay=delay_s, backoff=Backoff.EXPONENTIAL)


class StreamingRunConfig(Config, LaunchOptions):
    """Launch options of a streaming deployment (Launchpad): those of ``kappa run``."""

    version: str | None = Field(
        default=None,
        description="the version to run (default: the pipeline's declared version). A version "
        "that is not live runs side by side as a candidate and never overtakes the live one.",
    )


def table_key(pipeline: str) -> AssetKey:
    return AssetKey(table_key_path(pipeline))


def deploy_job(pipeline: str) -> "UnresolvedAssetJobDefinition":
    """``deploy_<pipeline>``: the job that runs one of the pipeline's streaming deployments."""
    return define_asset_job(
        deploy_job_name(pipeline),
        selection=AssetSelection.assets(table_key(pipeline)),
        description=f"Run a `{pipeline}` streaming deployment (continuous by default). Give a "
        "version to run another version side by side, or starting offsets/timestamp to "
        "reprocess from there.",
        tags={PIPELINE_TAG: pipeline},
    )


def streaming_command(pipeline: Pipeline, version: str, config: StreamingRunConfig) -> list[str]:
    """``python -m streaming run`` with the launch options as its flags, reporting through Pipes."""
    run = [sys.executable, "-m", "streaming", "run", pipeline.name, "--pipes", "--version", version]
    return run + to_flags(config)


def run_version(context: AssetExecutionContext, requested: str | None, declared: str) -> str:
    """The version this run deploys, fixed at its first attempt as the run's ``kappa/version`` tag.

    A step retry (or a run retry, which copies tags) after a code-location reload must restart
    the same version, not the newly declared one.
    """
    tagged = context.run.tags.get(VERSION_TAG)
    if tagged:
        return tagged
    try:
        version = validate_version(requested or declared)
    except InvalidNameError as exc:  # a bad launch config: retrying cannot fix it
        raise Failure(description=str(exc), allow_retries=False) from None
    context.instance.add_run_tags(context.run_id, {VERSION_TAG: version})
    return version


def table_asset(pipeline: Pipeline, retry_delay_s: float) -> AssetsDefinition:
    @asset(
        key=table_key(pipeline.name),
        deps=[topic_key(t) for t in pipeline.topics],
        group_name="tables",
        code_version=pipeline.version,
        description=pipeline.description,
        kinds={"spark", "delta"},
        metadata={"pipeline": pipeline.name, "key": pipeline.table.key},
        output_required=False,
        retry_policy=crash_retries(retry_delay_s),
    )
    def _table(context: AssetExecutionContext, config: StreamingRunConfig, kappa: KappaSettings):
        settings = kappa.load()
        version = run_version(context, config.version, pipeline.version)
        deployment = Deployment(pipeline.name, version, settings.home)
        command = streaming_command(pipeline, deployment.version, config)
        yield from run_deployment(context, pipeline, deployment, command, settings)

    return _table
