"""`kappa deployments list` and `kappa stop`: the UI's view of deployments, over GraphQL.

A deployment is a version of a pipeline: a run of its table asset on the version's partition
(``deploy_<pipeline>``, or a materialization from the asset page). The list has one row per
running version with what that version last reported on its partition: role, state, catch-up
progress, lag and rows, as the asset page shows them. A deployment that is not running says
why: its run queued, the engine starting it or refusing it, or how its last run failed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kappa.dagster_api import DagsterApi, RunInfo
from kappa.errors import OperatorError
from streaming.dagster_names import PARTITION_TAG, VERSION_TAG, deploy_job_name, table_key_path
from streaming.deployment import deployment_id

_REPORTS = """
query Reports($key: AssetKeyInput!, $partitions: [String!]) {
  assetOrError(assetKey: $key) {
    __typename
    ... on Asset {
      assetObservations(partitions: $partitions, limit: 20) {
        runId timestamp partition metadataEntries { ...Entry }
      }
      assetMaterializations(partitions: $partitions, limit: 1) {
        runId timestamp partition metadataEntries { ...Entry }
      }
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

_FAILURE = """
query Failure($runId: ID!) {
  runOrError(runId: $runId) {
    __typename
    ... on Run {
      eventConnection(limit: 1000) {
        events {
          __typename
          ... on ExecutionStepFailureEvent { error { message } failureMetadata { description } }
          ... on RunFailureEvent { message }
        }
      }
    }
  }
}
"""

_RUN_STATUS = {"QUEUED": "queued", "STARTING": "starting", "NOT_STARTED": "starting"}


def is_deployment_run(run: RunInfo, pipeline: str) -> bool:
    """A run of the pipeline's streaming deployment: its deploy job, or a materialization of its
    table from the asset page (not a promote, quality or retire run)."""
    if run.job_name == deploy_job_name(pipeline):
        return True
    return run.job_name.startswith("__ASSET_JOB") and tuple(table_key_path(pipeline)) in run.assets


def run_version(run: RunInfo) -> str | None:
    """The version a deployment run deploys: its partition."""
    return run.tags.get(VERSION_TAG) or run.tags.get(PARTITION_TAG)


@dataclass(frozen=True)
class DeploymentStatus:
    pipeline: str
    version: str | None
    role: str | None
    status: str
    run_id: str | None
    progress: str
    lag: int | None
    rows: int | None
    updated_at: float | None
    note: str = ""  # why it is not running (yet), when it is not


def _entries(event: dict[str, Any]) -> dict[str, Any]:
    values = {}
    for entry in event.get("metadataEntries", []):
        for field in ("intValue", "floatValue", "text"):
            if field in entry and entry[field] is not None:
                values[entry["label"]] = entry[field]
    return values


def latest_event(api: DagsterApi, pipeline: str, version: str | None = None) -> dict | None:
    """The latest health report of a pipeline's version (of any version when None): its newest
    materialization or observation carrying a ``state``."""
    variables = {
        "key": {"path": table_key_path(pipeline)},
        "partitions": None if version is None else [version],
    }
    data = api.query(_REPORTS, variables)["assetOrError"]
    if data["__typename"] != "Asset":
        return None
    events = data["assetObservations"] + data["assetMaterializations"]
    reports = [e for e in events if any(m["label"] == "state" for m in e["metadataEntries"])]
    return max(reports, key=lambda e: float(e["timestamp"]), default=None)


def reported_rates(api: DagsterApi, pipeline: str, versions: Iterable[str]) -> tuple[float, ...]:
    """The processed records per second each version last reported (those that did)."""
    rates = []
    for version in versions:
        event = latest_event(api, pipeline, version)
        rate = _entries(event).get("processed_rows_per_s") if event else None
        if rate is not None:
            rates.append(float(rate))
    return tuple(rates)


def progress_text(values: dict[str, Any]) -> str:
    """A version's catch-up progress, e.g. ``63.0% (ETA 41 s)``; empty when it is not behind."""
    if "catch_up_pct" not in values:
        return ""
    eta = str(values.get("catch_up_eta_s", "unknown"))
    return f"{float(values['catch_up_pct']):.1f}% (ETA {eta if eta == 'unknown' else eta + ' s'})"


def _status(
    api: DagsterApi, pipeline: str, run: RunInfo, engine: dict[str, dict[str, Any]] | None
) -> DeploymentStatus:
    version = run_version(run)
    event = latest_event(api, pipeline, version) if version else None
    values = _entries(event) if event and event["runId"] == run.run_id else {}
    status = _RUN_STATUS.get(run.status) or str(values.get("state", "starting"))
    note = (
        _note(run, deployment_id(pipeline, version), engine)
        if status in ("queued", "starting")
        else ""
    )
    return DeploymentStatus(
        note=note,
        pipeline=pipeline,
        version=version,
        role=values.get("role"),
        status=status,
        run_id=run.run_id,
        progress=progress_text(values),
        lag=_int(values.get("total_lag")),
        rows=_int(values.get("dagster/row_count")),
        updated_at=float(event["timestamp"]) / 1000 if values and event else None,
    )


def deployment_statuses(
    api: DagsterApi,
    pipelines: Iterable[str],
    engine: dict[str, dict[str, Any]] | None = None,
) -> list[DeploymentStatus]:
    """One row per running version of each pipeline; a pipeline with none gets one row saying so
    (and how its last deployment run failed, if it did). ``engine``: the engine's deployments by
    id, when it answers (None: it does not)."""
    active = api.active_runs()
    ended = api.runs(("FAILURE",), limit=200)
    statuses = []
    for pipeline in pipelines:
        runs = sorted(
            (r for r in active if is_deployment_run(r, pipeline)),
            key=lambda r: (run_version(r) or "", r.run_id),
        )
        if not runs:
            failed = next((r for r in ended if is_deployment_run(r, pipeline)), None)
            note = _failure(api, failed) if failed is not None else ""
            statuses.append(
                DeploymentStatus(
                    pipeline, None, None, "not running", None, "", None, None, None, note
                )
            )
        statuses.extend(_status(api, pipeline, run, engine) for run in runs)
    return statuses


def _note(run: RunInfo, deployment: str, engine: dict[str, dict[str, Any]] | None) -> str:
    """Why an active run's deployment has not reported running (yet)."""
    if run.status == "QUEUED":
        return "queued by Dagster: waiting for the daemon to launch its run"
    hosted = None if engine is None else engine.get(deployment)
    if run.status != "STARTED":
        # The launch starts the deployment in the engine before the run's process has loaded
        # the code location, and that process's step takes it over.
        if hosted is not None and hosted["state"] == "running":
            return "running in the engine; its run's process is starting and takes it over"
        return "its run's process is starting (loading the code location)"
    if engine is None:
        return "waiting for the engine (not answering; its run starts it, as kappa up does)"
    if hosted is None:
        return "not in the engine yet (or in an application of its own)"
    if hosted["state"] == "starting":
        return "starting in the engine"
    return hosted.get("error") or ""


def _failure(api: DagsterApi, run: RunInfo) -> str:
    """How a failed run failed: its step's failure (the reason a user can act on) first."""
    data = api.query(_FAILURE, {"runId": run.run_id})["runOrError"]
    if data.get("__typename") != "Run":
        return ""
    messages = []
    for event in data["eventConnection"]["events"]:
        if event["__typename"] == "ExecutionStepFailureEvent":
            described = (event.get("failureMetadata") or {}).get("description")
            messages.append(described or (event.get("error") or {}).get("message", ""))
        elif event["__typename"] == "RunFailureEvent":
            messages.append(event.get("message") or "")
    reason = next((m for m in messages if m), "")
    return f"last run {run.run_id[:8]} failed: {reason.splitlines()[0]}" if reason else ""


def stop_deployment(api: DagsterApi, pipeline: str, version: str | None = None) -> list[str]:
    """Terminate the active runs of ``pipeline`` (of one version when given); returns their ids."""
    runs = [
        r
        for r in api.active_runs()
        if is_deployment_run(r, pipeline) and version in (None, run_version(r))
    ]
    if not runs:
        which = pipeline if version is None else f"{pipeline} {version}"
        msg = f"no active deployment of {which} (see `kappa deployments list`)"
        raise OperatorError(msg)
    ids = [r.run_id for r in runs]
    api.terminate(ids)
    return ids


def _int(value: Any) -> int | None:
    return None if value is None else int(value)
