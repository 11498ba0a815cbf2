"""The quality suite's cadence while versions run: ``quality_sensor``.

A running version's suite runs once its deployment has committed (and again after each restart of
the deployment), then every ``quality.every_s``, as a check-only run of ``quality_<pipeline>`` on
the version's partition. So ``quality_suite`` completes on its own cadence; a deployment run
launched from the asset page, which also planned the check, sees it superseded by that run's
result instead of showing it in progress for as long as it lives. With ``quality.auto`` off the
sensor launches nothing and says so.
"""

# No `from __future__ import annotations`: Dagster inspects the sensor function's annotations.

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dagster import (
    DefaultSensorStatus,
    RunRequest,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    sensor,
)

from assets.resources import KappaSettings
from assets.runs import run_state
from streaming.dagster_names import PARTITION_TAG, PIPELINE_TAG, quality_job_name
from streaming.define.registry import registry
from streaming.delta.table_reader import latest_commit
from streaming.deployment import Deployment, deployment_id
from streaming.settings import Settings
from streaming.versions.comparable import deployed_versions


@dataclass(frozen=True)
class SuiteDue:
    pipeline: str
    version: str
    reason: str


def suites_due(settings: Settings, now: float, launched: Mapping[str, float]) -> list[SuiteDue]:
    """The running versions whose suite should run now, with why.

    Due: the deployment has committed and its suite never ran, last ran (or was last launched,
    ``launched`` by deployment id: a failed run leaves no result) before the deployment
    (re)started, or ``quality.every_s`` ago or longer.
    """
    every_s = settings.quality.every_s
    due = []
    for name in sorted(registry(settings.pipelines)):
        for version in deployed_versions(settings.home, name):
            deployment = Deployment(name, version, settings.home)
            holder = deployment.lock.holder()
            if holder is None or latest_commit(deployment.table_path) is None:
                continue
            result = deployment.validation_path
            attempts = [launched.get(deployment.id, 0.0)]
            attempts += [result.stat().st_mtime] if result.exists() else []
            last = max(attempts)
            if last == 0.0:
                reason = "never validated"
            elif last < float(holder.get("started_at") or 0.0):
                reason = "last validated before the deployment started"
            elif now - last >= every_s:
                reason = f"last validated {now - last:.0f} s ago"
            else:
                continue
            due.append(SuiteDue(name, version, f"{deployment.id}: {reason}"))
    return due


def quality_sensor(quality_jobs: Mapping[str, Any], interval_s: int) -> SensorDefinition:
    """``quality_jobs``: each pipeline's ``quality_<pipeline>`` job, by pipeline name;
    ``interval_s``: the least time between two evaluations (``dagster.sensor_interval_s``)."""

    @sensor(
        name="quality_sensor",
        jobs=list(quality_jobs.values()),
        minimum_interval_seconds=interval_s,
        default_status=DefaultSensorStatus.RUNNING,
        description="Runs each running version's quality suite once it has committed, after each "
        "restart, and every quality.every_s, unless quality.auto is off.",
    )
    def _sensor(context: SensorEvaluationContext, kappa: KappaSettings) -> SensorResult:
        settings = kappa.load()
        if not settings.quality.auto:
            return SensorResult(
                skip_reason="automatic suite runs are off (quality.auto, KAPPA_QUALITY_AUTO)"
            )
        now = time.time()
        launched = json.loads(context.cursor) if context.cursor else {}
        requests = []
        for due in suites_due(settings, now, launched):
            job = quality_job_name(due.pipeline)
            tags = {PIPELINE_TAG: due.pipeline, PARTITION_TAG: due.version}
            if (
                due.pipeline not in quality_jobs
                or run_state(context.instance, job, tags) == "active"
            ):
                continue
            context.log.info(f"running the quality suite of {due.reason}")
            launched[deployment_id(due.pipeline, due.version)] = now
            # A job of checks only has no partitions of its own: the run's partition tag is the
            # version its checks evaluate.
            requests.append(RunRequest(job_name=job, tags=tags))
        return SensorResult(
            run_requests=requests,
            cursor=json.dumps(launched),
            skip_reason=None if requests else "no running version's suite is due",
        )

    return _sensor
