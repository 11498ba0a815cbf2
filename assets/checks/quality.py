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
from streaming.define.pipeline import Pipeline
from streaming.table_quality import run_table_suite

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
    def _suite(context: AssetCheckExecutionContext, kappa: KappaSettings) -> AssetCheckResult:
        deployment, result = run_table_suite(kappa.load(), pipeline)
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
