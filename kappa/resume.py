"""Deployments that were running when the platform stopped come back when it starts again.

While `kappa up` runs it keeps a list of the streaming deployments Dagster is running
(``Home.running_deployments``, refreshed every few seconds and once more just before a
Ctrl-C stops them). A deployment a user stops leaves the list; one the platform's shutdown stops,
or that dies with the platform (kill -9, power loss), stays on it. At the next start each listed
deployment is launched again with its launch config and version, and resumes from its
checkpoint. Runs a killed Dagster left marked as running are marked canceled first, so the UI
does not show them as running.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import yaml

from kappa.dagster_api import ACTIVE_STATUSES, DagsterApi
from kappa.deploy import launch
from streaming.atomic_file import write_atomically
from streaming.dagster_names import (
    PARTITION_TAG,
    REASON_TAG,
    TABLES,
    VERSION_TAG,
    deploy_job_name,
    deploy_op_name,
)
from streaming.define.registry import pipeline_names
from streaming.deployment import deployment_id
from streaming.settings import Settings
from streaming.wait import wait_until

# Resuming waits for a busy Dagster: each GraphQL call up to RESUME_CALL_TIMEOUT_S, tries every
# RESUME_RETRY_S until RESUME_TIMEOUT_S.
RESUME_CALL_TIMEOUT_S = 30.0
RESUME_RETRY_S = 5.0
RESUME_TIMEOUT_S = 300.0

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


@dataclass(frozen=True)
class RunningDeployment:
    pipeline: str
    run_id: str
    run_config: dict[str, Any]
    tags: dict[str, str]

    @property
    def version(self) -> str | None:
        """The version (the run's partition) it deploys."""
        return self.tags.get(VERSION_TAG) or self.tags.get(PARTITION_TAG)


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
        if kind == TABLES and len(rest) == 1 and rest[0] in pipelines:
            return rest[0]
    return None


def running_deployments(api: DagsterApi, pipelines: list[str]) -> list[RunningDeployment]:
    """The streaming deployments Dagster is running now."""
    found = []
    for run in _active_runs(api):
        pipeline = _pipeline_of(run, pipelines)
        if pipeline is None:
            continue
        step = deploy_op_name(pipeline)
        config = (yaml.safe_load(run["runConfigYaml"] or "{}") or {}).get("ops", {}).get(step, {})
        tags = {
            t["key"]: t["value"]
            for t in run["tags"]
            if t["key"].startswith("kappa/") or t["key"] == PARTITION_TAG
        }
        found.append(RunningDeployment(pipeline, run["runId"], {"ops": {step: config}}, tags))
    return found


def remember(settings: Settings, deployments: list[RunningDeployment]) -> None:
    payload = json.dumps([asdict(d) for d in deployments], indent=1, sort_keys=True)
    write_atomically(settings.home.running_deployments, payload)


def remembered(settings: Settings) -> list[RunningDeployment]:
    try:
        text = settings.home.running_deployments.read_text()
        return [RunningDeployment(**d) for d in json.loads(text)]
    except FileNotFoundError:
        return []


def mark_orphans_canceled(api: DagsterApi, started_before: float) -> list[str]:
    """Runs still marked active that began before this platform start have no process left."""
    orphans = [r["runId"] for r in _active_runs(api) if (r["startTime"] or 0) < started_before]
    if orphans:
        api.mark_canceled(orphans)
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
        if deployment_id(deployment.pipeline, deployment.version) in skip:
            continue
        tags = {**deployment.tags, "kappa/resumed_from": deployment.run_id}
        tags[REASON_TAG] = "resumed after a platform restart"
        if deployment.version is None:  # a run that never started has no version to resume
            continue
        run_id = launch(
            settings, deployment.pipeline, deployment.version, deployment.run_config, tags
        )
        launched.append((deployment, run_id))
    return launched


def resume_at_start(
    settings: Settings,
    api: DagsterApi,
    started_at: float,
    skip: set[str],
    stopping: Callable[[], bool],
) -> bool:
    """Once Dagster has loaded the code, mark the previous platform's orphaned runs canceled and
    relaunch what was running; False if that did not happen (the code never loaded, or Dagster
    never answered), so the list of what to resume stays for the next start.

    Dagster answers slowly while it loads and launches, so each call may take long, and a call
    that fails is tried again until ``RESUME_TIMEOUT_S``: a deployment already launched by an
    earlier try is active by then and is not launched twice.
    """
    if not wait_until(lambda: stopping() or _code_loaded(api), timeout_s=120) or stopping():
        return False
    patient = DagsterApi(settings, timeout_s=RESUME_CALL_TIMEOUT_S)
    failures: list[Exception] = []
    orphans_marked = False

    def attempt() -> bool:
        nonlocal orphans_marked
        try:
            if not orphans_marked:
                orphans = mark_orphans_canceled(patient, started_at)
                orphans_marked = True
                if orphans:
                    print(f"marked {len(orphans)} run(s) of the previous platform as canceled")
            pipelines = pipeline_names(settings.pipelines)
            for deployment, run_id in resume(settings, patient, pipelines, skip):
                print(
                    f"resumed {deployment.pipeline} {deployment.version or ''} (run {run_id}, "
                    f"was {deployment.run_id})",
                    flush=True,
                )
        except Exception as exc:  # Dagster busy: try again
            failures.append(exc)
            return False
        return True

    done = wait_until(
        lambda: stopping() or attempt(), timeout_s=RESUME_TIMEOUT_S, interval_s=RESUME_RETRY_S
    )
    if not done:  # the platform still runs; the user can deploy by hand
        print(
            f"could not resume the previous deployments in {RESUME_TIMEOUT_S:.0f} s "
            f"({len(failures)} tries): {failures[-1] if failures else 'no answer'}; deploy them "
            "from the UI or with `kappa deploy`, or start the platform again to retry",
            file=sys.stderr,
            flush=True,
        )
    return done


def remember_running(settings: Settings, api: DagsterApi) -> None:
    """Note the deployments running now; when Dagster does not answer, the last list stays."""
    try:
        remember(settings, running_deployments(api, pipeline_names(settings.pipelines)))
    except Exception:  # Dagster busy or not up yet
        return


def _code_loaded(api: DagsterApi) -> bool:
    try:
        data = api.query(
            "{ repositoriesOrError { __typename ... on RepositoryConnection { nodes { name } } } }"
        )
    except Exception:
        return False
    return bool(data["repositoriesOrError"].get("nodes"))
