"""Reporting to Dagster through Dagster Pipes (the only Dagster-aware module in streaming/).

It uses the lightweight ``dagster-pipes`` protocol package, not Dagster itself: the streaming job
stays runnable anywhere, and Dagster reads what it reports.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from dagster_pipes import PipesContext, PipesMetadataType, PipesMetadataValue, open_dagster_pipes

from streaming.run.reporting import Snapshot
from streaming.settings import Settings

ROW_COUNT = "dagster/row_count"  # Dagster shows it as the table's row count


def _typed(kind: PipesMetadataType, value: Any) -> PipesMetadataValue:
    return {"raw_value": value, "type": kind}


def snapshot_metadata(snapshot: Snapshot) -> dict[str, PipesMetadataValue]:
    """A progress report as Dagster metadata, each value with its type.

    Numbers are what Dagster plots, so only the series worth watching over time are numbers:
    rates, lag, batch duration, row count and catch-up percent. Totals and identifiers (batches,
    records, dead letters, uptime, table version) are plain text, paths are paths.
    """
    meta: dict[str, PipesMetadataValue] = {
        "state": _typed("text", snapshot.state),
        "version": _typed("text", snapshot.version),
        "deployment": _typed("text", snapshot.deployment),
        "fingerprint": _typed("text", snapshot.fingerprint),
        "total_lag": _typed("int", snapshot.total_lag),
        "input_rows_per_s": _typed("float", round(snapshot.input_rows_per_s, 1)),
        "processed_rows_per_s": _typed("float", round(snapshot.processed_rows_per_s, 1)),
        "last_batch_duration_s": _typed("float", round(snapshot.last_batch_duration_s, 3)),
        ROW_COUNT: _typed("int", snapshot.table_rows),
        "table_version": _typed("text", str(snapshot.table_version)),
        "table_path": _typed("path", snapshot.table_path),
        "batches": _typed("text", str(snapshot.batches)),
        "records_processed": _typed("text", str(snapshot.records_processed)),
        "dead_lettered_total": _typed("text", str(snapshot.dead_lettered_total)),
        "dead_lettered_run": _typed("text", str(snapshot.dead_lettered_run)),
        "uptime_s": _typed("text", f"{snapshot.duration_s:.0f}"),
        "committed_offsets": _typed("json", snapshot.committed_offsets),
        "lag_per_partition": _typed("json", snapshot.lag),
    }
    if snapshot.role:
        meta["role"] = _typed("text", snapshot.role)
    if snapshot.behind_live is not None:
        eta = snapshot.catch_up_eta_s
        meta["live_version"] = _typed("text", snapshot.live_version)
        meta["catch_up_pct"] = _typed("float", snapshot.catch_up_pct)
        meta["behind_live"] = _typed("int", snapshot.behind_live)
        meta["catch_up_eta_s"] = _typed("text", "unknown" if eta is None else f"{eta:.0f}")
    if snapshot.fingerprint_drift:
        meta["code_changed_without_new_version"] = _typed(
            "text",
            f"table built by fingerprint {snapshot.fingerprint_drift}, running code is "
            f"{snapshot.fingerprint}: bump the pipeline's VERSION to reprocess side by side",
        )
    return meta


class PipesReporter:
    def __init__(self, context: PipesContext) -> None:
        self.context = context

    def started(self, deployment: Any, options: Any, settings: Settings) -> None:
        shown = json.dumps(settings.shown(), sort_keys=True)
        self.context.log.info(f"deployment {deployment.id} started with settings {shown}")

    def warning(self, message: str) -> None:
        self.context.log.warning(message)
        self.context.report_custom_message({"kind": "warning", "message": message})

    def progress(self, snapshot: Snapshot) -> None:
        self.context.report_custom_message({"kind": "progress", **snapshot.to_dict()})

    def finished(self, snapshot: Snapshot) -> None:
        self.context.report_custom_message({"kind": "finished", **snapshot.to_dict()})
        self.context.report_asset_materialization(
            metadata=snapshot_metadata(snapshot), data_version=str(snapshot.table_version)
        )


@contextmanager
def pipes_reporter() -> Iterator[PipesReporter]:
    with open_dagster_pipes() as context:
        yield PipesReporter(context)
