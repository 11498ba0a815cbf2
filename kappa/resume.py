"""Deployments that were running when the platform stopped come back when it starts again.

While `kappa up` runs it keeps a list of the streaming deployments Dagster is running
(``$KAPPA_HOME/run/deployments.json``, refreshed every few seconds and once more just before a
Ctrl-C stops them). A deployment a user stops leaves the list; one the platform's shutdown stops,
or that dies with the platform (kill -9, power loss), stays on it. At the next start each listed
deployment is launched again with its launch config and version, and resumes from its
checkpoint. Runs a killed Dagster left marked as running are marked canceled first, so the UI
does not show them as running.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

from kappa.dagster_api import ACTIVE_STATUSES, DagsterApi
from kappa.deploy import VERSION_TAG, launch
from kappa.deployments import deploy_job_name
from kappa.settings import Settings
from streaming.atomic_file import write_atomically

_ACTIVE = """
query Active($filter: RunsFilter) {
  runsOrError(filter: $filter) {
    __typename
    ... on Runs {
      results { runId jobName runConfigYaml startTime tags { key value } assetSelection { path } }
    }
    ... on PythonError { message }
  }
}
"""

_MARK_CANCELED = """
mutation MarkCanceled($runIds: [String!]!) {
  terminateRuns(runIds: $runIds, terminatePolicy: MARK_AS_CANCELED_IMMEDIATELY) { __typename }
}
"""


@dataclass(frozen=True)
class RunningDeployment:
    pipeline: str
    run_id: str
    run_config: dict[str, Any]
    tags: dict[str, str]

    @property
    def version(self) -> str | None:
        return self.tags.get(VERSION_TAG)


def _active_runs(api: DagsterApi) -> list[dict[str, Any]]:
    data = api.query(_ACTIVE, {"filter": {"statuses": list(ACTIVE_STATUSES)}})["runsOrError"]
    return data.get("results", []) if data["__typename"] == "Runs" else []


def _pipeline_of(run: dict[str, Any], pipelines: list[str]) -> str | None:
    """The pipeline whose deployment ``run`` is: its deploy job, or an asset run of its table."""
    for name in pipelines:
        if run["jobName"] == deploy_job_name(name):
            return name
    selected = [tuple(key["path"]) for key in run.get("assetSelection") or []]
    if run["jobName"].startswith("__ASSET_JOB") and len(selected) == 1:
        kind, *rest = selected[0]
        if kind == "tables" and len(rest) == 1 and rest[0] in pipelines:
            return rest[0]
    return None


def running_deployments(api: DagsterApi, pipelines: list[str]) -> list[RunningDeployment]:
    """The streaming deployments Dagster is running now."""
    found = []
    for run in _active_runs(api):
        pipeline = _pipeline_of(run, pipelines)
        if pipeline is None:
            continue
        step = f"tables__{pipeline}"
        config = (yaml.safe_load(run["runConfigYaml"] or "{}") or {}).get("ops", {}).get(step, {})
        tags = {t["key"]: t["value"] for t in run["tags"] if t["key"].startswith("kappa/")}
        found.append(RunningDeployment(pipeline, run["runId"], {"ops": {step: config}}, tags))
    return found


def _file(settings: Settings) -> Path:
    return settings.run_dir / "deployments.json"


def remember(settings: Settings, deployments: list[RunningDeployment]) -> None:
    payload = json.dumps([asdict(d) for d in deployments], indent=1, sort_keys=True)
    write_atomically(_file(settings), payload)


def remembered(settings: Settings) -> list[RunningDeployment]:
    try:
        return [RunningDeployment(**d) for d in json.loads(_file(settings).read_text())]
    except FileNotFoundError:
        return []


def mark_orphans_canceled(api: DagsterApi, started_before: float) -> list[str]:
    """Runs still marked active that began before this platform start have no process left."""
    orphans = [r["runId"] for r in _active_runs(api) if (r["startTime"] or 0) < started_before]
    if orphans:
        api.query(_MARK_CANCELED, {"runIds": orphans})
    return orphans


def resume(
    settings: Settings, api: DagsterApi, pipelines: list[str], skip: set[str]
) -> list[tuple[RunningDeployment, str]]:
    """Launch every remembered deployment that is not running now; returns (what, new run id).

    ``skip`` holds deployment ids (``<pipeline>__<version>``) that must not be launched (their
    checkpoint is ahead of the log).
    """
    running = {(d.pipeline, d.version) for d in running_deployments(api, pipelines)}
    launched = []
    for deployment in remembered(settings):
        if deployment.pipeline not in pipelines or (deployment.pipeline, deployment.version) in (
            running
        ):
            continue
        if f"{deployment.pipeline}__{deployment.version}" in skip:
            continue
        tags = {**deployment.tags, "kappa/resumed_from": deployment.run_id}
        tags["kappa/reason"] = "resumed after a platform restart"
        launched.append(
            (deployment, launch(settings, deployment.pipeline, deployment.run_config, tags))
        )
    return launched
