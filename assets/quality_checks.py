"""Great Expectations suites as Dagster asset checks on every table (live version snapshot).

They run after a table's materialization, on a schedule for continuous deployments, and on
demand from the UI. Results carry the GE numbers and a link to the Data Docs page; the latest
result of each table is kept for `kappa quality report`.
"""

# No `from __future__ import annotations`: Dagster inspects the check function's annotations.

from pathlib import Path

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetCheckSeverity,
    AssetKey,
    MetadataValue,
    asset_check,
)

from assets.resources import KappaSettings
from kappa.settings import Settings
from kappa.table_output import resolve_deployment
from streaming.pipeline import Pipeline

QUALITY_CHECK = "quality_suite"


def validation_path(settings: Settings, deployment_id: str) -> Path:
    return settings.home / "quality" / "validations" / f"{deployment_id}.json"


def run_table_suite(settings: Settings, pipeline: Pipeline, version: str | None = None):  # type: ignore[no-untyped-def]
    """Validate the table's current snapshot; returns (deployment, TableValidation)."""
    from quality import save_result, validate_table
    from streaming.spark_session import build_spark_session
    from streaming.table_reader import read_spark

    deployment = resolve_deployment(settings, pipeline.name, version)
    spark = build_spark_session(settings.spark.master, settings.spark.conf)
    snapshot = read_spark(spark, deployment.table_path)
    result = validate_table(
        snapshot,
        pipeline.quality,
        docs_dir=settings.home / "quality" / "docs" / deployment.id,
    )
    save_result(validation_path(settings, deployment.id), result)
    return deployment, result


def quality_check(key: AssetKey, pipeline: Pipeline) -> AssetChecksDefinition:
    @asset_check(
        asset=key,
        name=QUALITY_CHECK,
        description="Great Expectations suite: key not null and unique, exact schema, and the "
        "pipeline's domain rules, on the live version's current snapshot.",
    )
    def _suite(context: AssetCheckExecutionContext, kappa: KappaSettings) -> AssetCheckResult:
        deployment, result = run_table_suite(kappa.load(), pipeline)
        metadata = dict(result.to_metadata())
        metadata["deployment"] = deployment.id
        if result.docs_page:
            metadata["data_docs"] = MetadataValue.url(Path(result.docs_page).as_uri())
        return AssetCheckResult(
            passed=result.success,
            severity=AssetCheckSeverity.ERROR,
            metadata=metadata,
            description="; ".join(result.failures) or "all expectations met",
        )

    return _suite
