"""Reporting to Dagster through Dagster Pipes (the only Dagster-aware module in streaming/).

It uses the lightweight ``dagster-pipes`` protocol package, not Dagster itself: the streaming job
stays runnable anywhere, and Dagster reads what it reports.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from dagster_pipes import PipesContext, open_dagster_pipes

from streaming.run.reporting import Snapshot


def snapshot_metadata(snapshot: Snapshot) -> dict[str, Any]:
    """Dagster metadata (numbers stay numbers, so the UI can plot them)."""
    meta: dict[str, Any] = {
        "state": snapshot.state,
        "deployment": snapshot.deployment,
        "version": snapshot.version,
        "fingerprint": snapshot.fingerprint,
        "table_rows": snapshot.table_rows,
        "table_version": snapshot.table_version,
        "table_path": {"raw_value": snapshot.table_path, "type": "path"},
        "total_lag": snapshot.total_lag,
        "batches": snapshot.batches,
        "records_processed": snapshot.records_processed,
        "input_rows_per_s": round(snapshot.input_rows_per_s, 1),
        "processed_rows_per_s": round(snapshot.processed_rows_per_s, 1),
        "last_batch_duration_s": round(snapshot.last_batch_duration_s, 3),
        "dead_lettered_total": snapshot.dead_lettered_total,
        "dead_lettered_run": snapshot.dead_lettered_run,
        "duration_s": round(snapshot.duration_s, 2),
        "committed_offsets": {"raw_value": snapshot.committed_offsets, "type": "json"},
        "lag_per_partition": {"raw_value": snapshot.lag, "type": "json"},
    }
    if snapshot.role:
        meta["role"] = snapshot.role
    if snapshot.behind_live is not None:
        meta["live_version"] = snapshot.live_version
        meta["catch_up_pct"] = snapshot.catch_up_pct
        meta["behind_live"] = snapshot.behind_live
        meta["catch_up_eta_s"] = (
            snapshot.catch_up_eta_s if snapshot.catch_up_eta_s is not None else "unknown"
        )
    if snapshot.fingerprint_drift:
        meta["code_changed_without_new_version"] = (
            f"table built by fingerprint {snapshot.fingerprint_drift}, running code is "
            f"{snapshot.fingerprint}: bump the pipeline's VERSION to reprocess side by side"
        )
    for topic, parts in snapshot.committed_offsets.items():
        for partition, offset in parts.items():
            meta[f"offset.{topic}.{partition}"] = offset
            meta[f"lag.{topic}.{partition}"] = snapshot.lag.get(topic, {}).get(partition, 0)
    return meta


class PipesReporter:
    def __init__(self, context: PipesContext) -> None:
        self.context = context

    def started(self, deployment: Any, options: Any) -> None:
        self.context.log.info(f"deployment {deployment.id} started")

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
