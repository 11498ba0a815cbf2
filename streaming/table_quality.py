"""Running a table's quality suite on its live snapshot and keeping the latest result.

Dagster-free: the ``quality_suite`` asset check and ``kappa quality report --run`` both call it.
A snapshot of up to ``quality.local_max_rows`` stored rows is read with delta-rs and checked with
pandas in the calling process, so it starts no Spark job; a larger one is checked on Spark.
"""

from __future__ import annotations

from typing import Any

from streaming.define.pipeline import Pipeline
from streaming.deployment import Deployment
from streaming.settings import Settings
from streaming.spark.session import SparkProvider, session_provider
from streaming.versions.live_pointer import serving_deployment


def checks_locally(settings: Settings, pipeline: Pipeline, version: str | None = None) -> bool:
    """Whether the suite of ``version`` (else the live one) runs with pandas, without Spark."""
    from streaming.delta.table_reader import open_table, stored_rows

    deployment = serving_deployment(settings.home, pipeline.name, pipeline.version, version)
    return _fits(settings, stored_rows(open_table(deployment.table_path)))


def _fits(settings: Settings, rows: int | None) -> bool:
    return rows is not None and rows <= settings.quality.local_max_rows


def run_table_suite(
    settings: Settings,
    pipeline: Pipeline,
    version: str | None = None,
    spark: SparkProvider | None = None,
) -> tuple[Deployment, Any]:
    """Validate the snapshot readers see now (``version``, else the live one); returns
    (deployment, quality.TableValidation). ``spark``: the session to use for a table too large
    to check locally (default: the platform's, built from the settings)."""
    from quality import save_result, validate_table
    from streaming.delta.table_reader import open_table, read_arrow, read_spark, stored_rows

    deployment = serving_deployment(settings.home, pipeline.name, pipeline.version, version)
    table = open_table(deployment.table_path)  # a missing table is a clear error before Spark
    if _fits(settings, stored_rows(table)):
        snapshot: Any = read_arrow(deployment.table_path, table.version())
    else:
        session = (spark or session_provider(settings))()
        snapshot = read_spark(session, deployment.table_path, table.version())
    result = validate_table(
        snapshot, pipeline.quality_spec, docs_dir=deployment.validation_docs_path
    )
    save_result(deployment.validation_path, result)
    return deployment, result
