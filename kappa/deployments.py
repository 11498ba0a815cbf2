"""`kappa deployments list` and `kappa stop`: the UI's view of deployments, over GraphQL."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from assets.names import deploy_job_name, table_key_path
from kappa.dagster_api import ACTIVE_STATUSES, DagsterApi, RunInfo
from kappa.errors import OperatorError

_LATEST = """
query Latest($key: AssetKeyInput!) {
  assetOrError(assetKey: $key) {
    __typename
    ... on Asset {
      assetObservations(limit: 20) { runId timestamp metadataEntries { ...Entry } }
      assetMaterializations(limit: 1) { runId timestamp metadataEntries { ...Entry } }
    }
  }
}
fragment Entry on MetadataEntry {
  label
  ... on IntMetadataEntry { intValue }
  ... on FloatMetadataEntry { floatValue }
  ... on TextMetadataEntry { text }
}
"""

_RUN_STATUS = {
    "FAILURE": "failed",
    "CANCELED": "stopped",
    "CANCELING": "stopping",
    "SUCCESS": "finished",
    "QUEUED": "starting",
    "STARTING": "starting",
    "NOT_STARTED": "starting",
}


def is_deployment_run(run: RunInfo, pipeline: str, event: dict[str, Any] | None) -> bool:
    """A run of the pipeline's streaming deployment: its deploy job (or a materialization of its
    table from the asset page, known by the table's latest event) — not a promote or retire run,
    which carry the pipeline's tag too."""
    if run.job_name == deploy_job_name(pipeline):
        return True
    from_asset_page = run.job_name.startswith("__ASSET_JOB")
    return from_asset_page and event is not None and run.run_id == event["runId"]


@dataclass(frozen=True)
class DeploymentStatus:
    pipeline: str
    status: str
    run_id: str | None
    lag: int | None
    rows: int | None
    updated_at: float | None


def _entries(event: dict[str, Any]) -> dict[str, Any]:
    values = {}
    for entry in event.get("metadataEntries", []):
        for field in ("intValue", "floatValue", "text"):
            if field in entry and entry[field] is not None:
                values[entry["label"]] = entry[field]
    return values


def latest_event(api: DagsterApi, pipeline: str) -> dict[str, Any] | None:
    """The latest health report of a pipeline's deployment (the table also gets versions
    overview observations from sensors and version jobs; those carry no ``state``)."""
    data = api.query(_LATEST, {"key": {"path": table_key_path(pipeline)}})["assetOrError"]
    if data["__typename"] != "Asset":
        return None
    events = data["assetObservations"] + data["assetMaterializations"]
    reports = [e for e in events if any(m["label"] == "state" for m in e["metadataEntries"])]
    return max(reports, key=lambda e: float(e["timestamp"]), default=None)


def deployment_statuses(api: DagsterApi, pipelines: list[str]) -> list[DeploymentStatus]:
    runs = {r.run_id: r for r in api.runs(limit=200)}
    statuses = []
    for pipeline in pipelines:
        event = latest_event(api, pipeline)
        active = _active_run(runs.values(), pipeline, event)
        if event is None and active is None:
            statuses.append(DeploymentStatus(pipeline, "never run", None, None, None, None))
            continue
        values = _entries(event) if event else {}
        run_id = active.run_id if active else (event or {}).get("runId")
        run = runs.get(run_id or "")
        if run is not None and run.status in ACTIVE_STATUSES:
            status = (
                str(values.get("state", "starting"))
                if run.status == "STARTED"
                else (_RUN_STATUS.get(run.status, run.status.lower()))
            )
        elif run is not None:
            status = _RUN_STATUS.get(run.status, run.status.lower())
        else:
            status = str(values.get("state", "unknown"))
        statuses.append(
            DeploymentStatus(
                pipeline=pipeline,
                status=status,
                run_id=run_id,
                lag=_int(values.get("total_lag")),
                rows=_int(values.get("table_rows")),
                updated_at=float(event["timestamp"]) / 1000 if event else None,
            )
        )
    return statuses


def _active_run(runs: Any, pipeline: str, event: dict[str, Any] | None) -> Any:
    active = (r for r in runs if r.status in ACTIVE_STATUSES)
    return next((r for r in active if is_deployment_run(r, pipeline, event)), None)


def stop_deployment(api: DagsterApi, pipeline: str) -> list[str]:
    """Terminate the active runs of ``pipeline``; returns their ids."""
    event = latest_event(api, pipeline)
    runs = [r for r in api.active_runs() if is_deployment_run(r, pipeline, event)]
    if not runs:
        msg = f"no active deployment of {pipeline!r} (see `kappa deployments list`)"
        raise OperatorError(msg)
    ids = [r.run_id for r in runs]
    api.terminate(ids)
    return ids


def _int(value: Any) -> int | None:
    return None if value is None else int(value)
