"""Great Expectations suites as Dagster asset checks on every table (live version snapshot).

They run after a table's materialization, on a schedule for continuous deployments, and on
demand from the UI. Results carry the GE numbers and a link to the Data Docs page; the latest
result of each table is kept for ``kappa quality report``.
"""

# No `from __future__ import annotations`: Dagster inspects the check function's annotations.

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetCheckSeverity,
    AssetKey,
    AssetSelection,
    DefaultScheduleStatus,
    MetadataValue,
    ScheduleDefinition,
    asset_check,
    define_asset_job,
)

from assets.names import table_key_path
from assets.resources import KappaSettings, KappaSpark
from streaming.define.pipeline import Pipeline
from streaming.table_quality import run_table_suite

if TYPE_CHECKING:  # not exported by dagster itself
    from dagster._core.definitions.unresolved_asset_job_definition import (
        UnresolvedAssetJobDefinition,
    )


QUALITY_CHECK = "quality_suite"


def docs_link(page: str) -> MetadataValue:
    """A Data Docs page as a clickable link in the Dagster UI."""
    return MetadataValue.url(Path(page).as_uri())


def quality_check(key: AssetKey, pipeline: Pipeline) -> AssetChecksDefinition:
    @asset_check(
        asset=key,
        name=QUALITY_CHECK,
        description="Great Expectations suite: key not null and unique, exact schema, and the "
        "pipeline's domain rules, on the live version's current snapshot.",
    )
    def _suite(
        context: AssetCheckExecutionContext, kappa: KappaSettings, spark: KappaSpark
    ) -> AssetCheckResult:
        deployment, result = run_table_suite(
            kappa.load(), pipeline, spark=lambda: spark.spark_session
        )
        metadata = result.to_metadata()
        metadata["deployment"] = deployment.id
        if result.docs_page:
            metadata["data_docs"] = docs_link(result.docs_page)
        return AssetCheckResult(
            passed=result.success,
            severity=AssetCheckSeverity.ERROR,
            metadata=metadata,
            description="; ".join(result.failures) or "all expectations met",
        )

    return _suite


def quality_checks(pipelines: Mapping[str, Pipeline]) -> list[AssetChecksDefinition]:
    """The suite of every pipeline that declares a quality spec."""
    return [
        quality_check(AssetKey(table_key_path(name)), pipeline)
        for name, pipeline in pipelines.items()
        if pipeline.quality
    ]


def quality_job(checks: list[AssetChecksDefinition]) -> "UnresolvedAssetJobDefinition":
    return define_asset_job(
        "table_quality",
        selection=AssetSelection.checks(*checks),
        description="Run every table's Great Expectations suite on its live snapshot.",
    )


def quality_schedule(job: "UnresolvedAssetJobDefinition") -> ScheduleDefinition:
    """Every 10 minutes, off until switched on in the UI (a continuous table changes steadily)."""
    return ScheduleDefinition(
        name="table_quality_every_10_minutes",
        job=job,
        cron_schedule="*/10 * * * *",
        default_status=DefaultScheduleStatus.STOPPED,
    )
