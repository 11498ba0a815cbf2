"""Running a table's quality suite on its live snapshot and keeping the latest result.

Dagster-free: the ``quality_suite`` asset check and ``kappa quality report --run`` both call it.
"""

from __future__ import annotations

from typing import Any

from streaming.define.pipeline import Pipeline
from streaming.deployment import Deployment
from streaming.settings import Settings
from streaming.spark.session import SparkProvider, session_provider
from streaming.versions.live_pointer import serving_deployment


def run_table_suite(
    settings: Settings,
    pipeline: Pipeline,
    version: str | None = None,
    spark: SparkProvider | None = None,
) -> tuple[Deployment, Any]:
    """Validate the snapshot readers see now (``version``, else the live one); returns
    (deployment, quality.TableValidation). ``spark``: the session to use (default: the
    platform's, built from the settings)."""
    from quality import save_result, validate_table
    from streaming.delta.table_reader import open_table, read_spark

    deployment = serving_deployment(settings.home, pipeline.name, pipeline.version, version)
    open_table(deployment.table_path)  # a missing table is a clear error before Spark starts
    session = (spark or session_provider(settings))()
    result = validate_table(
        read_spark(session, deployment.table_path),
        pipeline.quality_spec,
        docs_dir=deployment.validation_docs_path,
    )
    save_result(deployment.validation_path, result)
    return deployment, result
