"""Running a table's quality suite on its current snapshot and keeping the latest result.

Dagster-free: the `quality_suite` asset check and `kappa quality report --run` both call it.
"""

from __future__ import annotations

from typing import Any

from streaming.define.pipeline import Pipeline
from streaming.run.deployment import Deployment
from streaming.settings import Settings
from streaming.versions.live_pointer import serving_deployment


def run_table_suite(
    settings: Settings, pipeline: Pipeline, version: str | None = None
) -> tuple[Deployment, Any]:
    """Validate the table's current snapshot; returns (deployment, quality.TableValidation)."""
    from quality import save_result, validate_table
    from streaming.delta.table_reader import read_spark
    from streaming.run.spark_session import build_spark_session

    deployment = serving_deployment(settings.home, pipeline.name, pipeline.version, version)
    spark = build_spark_session(settings.spark.master, settings.spark.conf)
    result = validate_table(
        read_spark(spark, deployment.table_path),
        pipeline.quality,
        docs_dir=settings.home.validation_docs(deployment.id),
    )
    save_result(settings.home.validation(deployment.id), result)
    return deployment, result
