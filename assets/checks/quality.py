"""Great Expectations suites as Dagster asset checks on every table, per version (partition).

A version's suite runs on its table's current snapshot: on demand from the UI ("Execute" on a
partition), and on a cadence while the version runs (``quality_sensor``), as a check-only run of
``quality_<pipeline>`` that completes. A table of up to ``quality.local_max_rows`` stored rows is
checked with pandas in the check's own process, so it takes no task slot from the deployments; a
larger one runs in the engine, on the Spark application the deployments share (a suite costs no
JVM of its own), unless the pipeline asks for an application of its own
(``engine.own_application``). Results carry the GE numbers and a link to
the Data Docs page; the latest result of each version is kept for ``kappa quality report``.
"""

# No `from __future__ import annotations`: Dagster inspects the check function's annotations.

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetCheckSeverity,
    AssetKey,
    AssetSelection,
    MetadataValue,
    asset_check,
    define_asset_job,
    in_process_executor,
)

from assets.partitions import version_partitions
from assets.refusals import refusing
from assets.resources import KappaSettings, KappaSpark
from streaming.dagster_names import BATCH_KIND, KIND_TAG, quality_job_name, table_key_path
from streaming.define.pipeline import Pipeline
from streaming.engine.client import EngineClient, ensure_engine
from streaming.settings import Settings
from streaming.table_quality import checks_locally, run_table_suite

if TYPE_CHECKING:  # not exported by dagster itself
    from dagster._core.definitions.unresolved_asset_job_definition import (
        UnresolvedAssetJobDefinition,
    )


QUALITY_CHECK = "quality_suite"
SUITE_TIMEOUT_S = 900.0  # one suite on a large table, while the engine also runs deployments


def docs_link(page: str) -> MetadataValue:
    """A Data Docs page as a clickable link in the Dagster UI."""
    return MetadataValue.url(Path(page).as_uri())


def quality_check(key: AssetKey, pipeline: Pipeline) -> AssetChecksDefinition:
    @asset_check(
        asset=key,
        name=QUALITY_CHECK,
        description="Great Expectations suite: key not null and unique, exact schema, and the "
        "pipeline's domain rules, on the version's current snapshot.",
        partitions_def=version_partitions(pipeline.name),
    )
    def _suite(
        context: AssetCheckExecutionContext, kappa: KappaSettings, spark: KappaSpark
    ) -> AssetCheckResult:
        settings = kappa.load()
        with refusing():
            local = checks_locally(settings, pipeline, context.partition_key)
            if local or pipeline.name in settings.engine.own_application:
                deployment, result = run_table_suite(
                    settings,
                    pipeline,
                    version=context.partition_key,
                    spark=lambda: spark.spark_session,
                )
                deployment_id = deployment.id
            else:
                deployment_id, result = _suite_in_engine(settings, pipeline, context.partition_key)
        metadata = result.to_metadata()
        metadata["deployment"] = deployment_id
        metadata["checked_with"] = "pandas" if local else "spark"
        if result.docs_page:
            metadata["data_docs"] = docs_link(result.docs_page)
        return AssetCheckResult(
            passed=result.success,
            severity=AssetCheckSeverity.ERROR,
            metadata=metadata,
            description="; ".join(result.failures) or "all expectations met",
        )

    return _suite


def _suite_in_engine(settings: Settings, pipeline: Pipeline, version: str) -> tuple[str, Any]:
    """The suite run by the engine (started if none runs); (deployment id, TableValidation)."""
    from quality import load_result

    ensure_engine(settings)
    answer = EngineClient(settings.home, timeout_s=SUITE_TIMEOUT_S).validate(pipeline.name, version)
    return answer["deployment"], load_result(answer["validation"])


def quality_checks(pipelines: Mapping[str, Pipeline]) -> dict[str, AssetChecksDefinition]:
    """The suite of every pipeline, by pipeline name."""
    return {
        name: quality_check(AssetKey(table_key_path(name)), pipeline)
        for name, pipeline in pipelines.items()
    }


def quality_job(pipeline: str, check: AssetChecksDefinition) -> "UnresolvedAssetJobDefinition":
    """``quality_<pipeline>``: run the suite on one version, the run's ``dagster/partition`` tag
    (a job of checks only has no partitions of its own to choose from)."""
    return define_asset_job(
        quality_job_name(pipeline),
        selection=AssetSelection.checks(check),
        description=f"Run `{pipeline}`'s Great Expectations suite on one version's snapshot: "
        "launch with the tag dagster/partition=<version>.",
        # One check: in the run's own process, without a step subprocess started for it.
        executor_def=in_process_executor,
        tags={KIND_TAG: BATCH_KIND},
    )
