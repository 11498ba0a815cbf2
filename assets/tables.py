"""One Dagster asset per streaming pipeline, partitioned by version: materializing a partition
runs that version's deployment.

By default the deployment is continuous: the run lives as long as the streaming query and
reports health every few seconds. The job runs as a subprocess and reports back through Dagster
Pipes (``assets.launcher``); Dagster never touches the data.
"""

# No `from __future__ import annotations` here: Dagster reads these annotations at definition time.

from typing import TYPE_CHECKING

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    AssetSelection,
    Backoff,
    Config,
    DagsterExecutionInterruptedError,
    Failure,
    RetryPolicy,
    asset,
    define_asset_job,
)

from assets.launcher import run_deployment
from assets.partitions import version_partitions
from assets.refusals import refusing
from assets.resources import KappaSettings
from assets.topics import topic_key
from streaming.dagster_names import (
    DEPLOYMENT_KIND,
    KIND_TAG,
    PIPELINE_TAG,
    VERSION_TAG,
    deploy_job_name,
    table_key_path,
)
from streaming.define.names import validate_version
from streaming.define.pipeline import Pipeline
from streaming.deployment import Deployment
from streaming.errors import InvalidNameError
from streaming.run.options import LaunchOptions

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
    """Launch options of a streaming deployment (Launchpad): those of ``kappa run``. The version
    is the run's partition."""


VERSIONS_NOTE = (
    "One partition per version. The live version materializes its partition as its table "
    "changes; the latest materialization's `versions` says which version is live, which are "
    "catching up and how far, and the last comparison's verdict. Other versions report their "
    "role, progress and health as observations on their partition, and a candidate's blocking "
    "`candidate_*` checks stay on its partition until a newer comparison replaces them."
)


def table_key(pipeline: str) -> AssetKey:
    return AssetKey(table_key_path(pipeline))


def deploy_job(pipeline: str) -> "UnresolvedAssetJobDefinition":
    """``deploy_<pipeline>``: the job that runs one of the pipeline's streaming deployments.

    Only the table: the deployment reports its health checks itself, and a run that planned the
    other checks would show them in progress for as long as the deployment lives.
    """
    return define_asset_job(
        deploy_job_name(pipeline),
        selection=AssetSelection.assets(table_key(pipeline)).without_checks(),
        description=f"Run a `{pipeline}` streaming deployment (continuous by default). The "
        "partition is the version: a version that is not live runs side by side and never "
        "overtakes the live one; a new partition reprocesses under a new version name "
        "(starting offsets/timestamp say from where).",
        tags={PIPELINE_TAG: pipeline, KIND_TAG: DEPLOYMENT_KIND},
        # No executor of its own: the code location's in-process one (assets.definitions).
    )


def run_version(context: AssetExecutionContext, pipeline: str) -> str:
    """The version this run deploys: its partition, also tagged on the run (``kappa/version``,
    ``kappa/pipeline``) so runs launched from the asset page are found like deploy-job runs."""
    try:
        version = validate_version(context.partition_key)
    except InvalidNameError as exc:  # a bad partition key: retrying cannot fix it
        raise Failure(description=str(exc), allow_retries=False) from None
    tags = {VERSION_TAG: version, PIPELINE_TAG: pipeline}
    if any(context.run.tags.get(k) != v for k, v in tags.items()):
        context.instance.add_run_tags(context.run_id, tags)
    return version


def table_asset(pipeline: Pipeline, retry_delay_s: float) -> AssetsDefinition:
    @asset(
        key=table_key(pipeline.name),
        deps=[topic_key(t) for t in pipeline.topics],
        group_name="tables",
        # The version is the partition; a code version would mark every version stale when the
        # declared one changes, although each keeps running its own pinned code.
        partitions_def=version_partitions(pipeline.name),
        description="\n\n".join(d for d in (pipeline.description, VERSIONS_NOTE) if d),
        kinds={"spark", "delta"},
        metadata={"pipeline": pipeline.name, "key": ", ".join(pipeline.table.keys)},
        output_required=False,
        retry_policy=crash_retries(retry_delay_s),
    )
    def _table(context: AssetExecutionContext, config: StreamingRunConfig, kappa: KappaSettings):
        settings = kappa.load()
        with refusing():
            version = run_version(context, pipeline.name)
        deployment = Deployment(pipeline.name, version, settings.home)
        options = LaunchOptions.model_validate(config.model_dump())
        try:
            yield from run_deployment(context, deployment, options, settings)
        except (DagsterExecutionInterruptedError, KeyboardInterrupt):
            # The run was terminated and the deployment stopped. The step runs in the run
            # worker (in-process executor), where Dagster hands an interrupt to the step's
            # RetryPolicy, which would start the deployment again; a failure that allows no retry
            # lets the run end CANCELED.
            raise Failure(
                description=f"{deployment.id}: the run was terminated; the deployment stopped "
                "at a batch boundary",
                allow_retries=False,
            ) from None

    return _table
