"""Sensors that drive side-by-side reprocessing; every decision is logged with its reason.

``new_version_sensor``: after a code-location reload, a pipeline whose declared version is
neither live nor running is started as a candidate (``deploy_<pipeline>`` with that version) from
the earliest offsets, next to the live version.

``candidate_sensor``: a candidate within reach of the live position gets a ``promote_version``
run: compare at equal offsets (the blocking ``candidate_*`` checks), then promote (policy
``auto``) or report and wait (policy ``manual``). It also keeps each table's versions overview
(live, candidates and progress, last comparison, history) current as asset observations.
"""

# No `from __future__ import annotations`: Dagster inspects the sensor functions' annotations.

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from dagster import (
    AssetObservation,
    DagsterInstance,
    DagsterRunStatus,
    DefaultSensorStatus,
    RunRequest,
    RunsFilter,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    sensor,
)

from assets.resources import KappaSettings
from assets.tables import table_key
from assets.versions.jobs import promote_version
from assets.versions.metadata import overview_metadata
from streaming.define.registry import registry
from streaming.versions.decisions import RunState, candidate_to_launch, comparison_to_run
from streaming.versions.overview import overview

INTERVAL_S = 10
_ACTIVE = {
    DagsterRunStatus.QUEUED,
    DagsterRunStatus.NOT_STARTED,
    DagsterRunStatus.STARTING,
    DagsterRunStatus.STARTED,
    DagsterRunStatus.CANCELING,
}


def run_state(instance: DagsterInstance, job_name: str, tags: Mapping[str, str]) -> RunState:
    runs = instance.get_runs(filters=RunsFilter(job_name=job_name, tags=dict(tags)), limit=1)
    if not runs:
        return "none"
    if runs[0].status in _ACTIVE:
        return "active"
    return "succeeded" if runs[0].status == DagsterRunStatus.SUCCESS else "failed"


def new_version_sensor(deploy_jobs: Mapping[str, Any]) -> SensorDefinition:
    """``deploy_jobs``: each pipeline's ``deploy_<pipeline>`` asset job, by pipeline name."""

    @sensor(
        name="new_version_sensor",
        jobs=list(deploy_jobs.values()),
        minimum_interval_seconds=INTERVAL_S,
        default_status=DefaultSensorStatus.RUNNING,
        description="Starts a pipeline's newly declared version side by side with the live one.",
    )
    def _sensor(context: SensorEvaluationContext, kappa: KappaSettings) -> SensorResult:
        settings = kappa.load()
        requests, reasons = [], []
        for name, pipeline in sorted(registry(settings.pipelines).items()):
            tags = {
                "kappa/pipeline": name,
                "kappa/version": pipeline.version,
                "kappa/fingerprint": pipeline.fingerprint,
            }
            job_name = deploy_jobs[name].name
            decision = candidate_to_launch(
                settings, pipeline, run_state(context.instance, job_name, tags)
            )
            context.log.info(decision.reason)
            reasons.append(decision.reason)
            if decision.act:
                op_name = "__".join(table_key(name).path)
                config = {"version": pipeline.version, "starting_offsets": "earliest"}
                requests.append(
                    RunRequest(
                        job_name=job_name,
                        run_config={"ops": {op_name: {"config": config}}},
                        tags={**tags, "kappa/role": "candidate", "kappa/reason": decision.reason},
                    )
                )
        return SensorResult(
            run_requests=requests, skip_reason=None if requests else "; ".join(reasons)
        )

    return _sensor


@sensor(
    name="candidate_sensor",
    jobs=[promote_version],
    minimum_interval_seconds=INTERVAL_S,
    default_status=DefaultSensorStatus.RUNNING,
    description="Compares a caught-up candidate with the live version, then promotes it or "
    "waits per the pipeline's policy; keeps the versions overview current.",
)
def candidate_sensor(context: SensorEvaluationContext, kappa: KappaSettings) -> SensorResult:
    settings = kappa.load()
    cursor = json.loads(context.cursor) if context.cursor else {}
    requests, reasons, events = [], [], []
    for name, pipeline in sorted(registry(settings.pipelines).items()):
        view = overview(settings, name)
        metadata = overview_metadata(view)
        digest = hashlib.sha256(repr(sorted(metadata.items())).encode()).hexdigest()[:16]
        if cursor.get(name) != digest:
            events.append(AssetObservation(asset_key=table_key(name), metadata=metadata))
            cursor[name] = digest
        tags = {
            "kappa/pipeline": name,
            "kappa/version": pipeline.version,
            "kappa/live": view.live_version or "",
        }
        decision = comparison_to_run(
            settings, pipeline, run_state(context.instance, promote_version.name, tags)
        )
        context.log.info(decision.reason)
        reasons.append(decision.reason)
        if decision.act:
            config = {
                "pipeline": name,
                "version": pipeline.version,
                "action": "promote" if pipeline.promotion == "auto" else "compare_only",
                "reason": "automatic promotion: caught up and every blocking check passed",
            }
            requests.append(
                RunRequest(
                    job_name=promote_version.name,
                    run_config={"ops": {"compare_and_promote": {"config": config}}},
                    tags={**tags, "kappa/reason": decision.reason},
                )
            )
    return SensorResult(
        run_requests=requests,
        skip_reason=None if requests else "; ".join(reasons),
        cursor=json.dumps(cursor),
        asset_events=events,
    )
