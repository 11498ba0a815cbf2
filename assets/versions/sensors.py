"""Sensors that drive side-by-side reprocessing; every decision is logged with its reason.

``new_version_sensor``: keeps every version of a pipeline (the declared one, and each one with
state under the platform home) a partition of its table, so the UI can launch and show it; after
a code-location reload, a pipeline whose declared version is neither live nor running is started
as a candidate (``deploy_<pipeline>``, partition = that version) from the earliest offsets, next
to the live version. It reports on the declared version's partition what that version changes
from the live one (category, reasons, whether it may start forward-only, the estimated time of
a full replay and of a forward-only start), whenever that changes.

``candidate_sensor``: a candidate within reach of the live position gets a ``promote_version``
run: compare at equal offsets (the blocking ``candidate_*`` checks), then promote (policy
``auto``) or report and wait (policy ``manual``). It also keeps each table's versions overview
(live, candidates and progress, last comparison, history) current as observations on the live
version's partition.
"""

# No `from __future__ import annotations`: Dagster inspects the sensor functions' annotations.

import hashlib
import json
from collections.abc import Mapping
from functools import partial
from typing import Any

from dagster import (
    AddDynamicPartitionsRequest,
    AssetObservation,
    DagsterInstance,
    DefaultSensorStatus,
    RunRequest,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    sensor,
)

from assets.partitions import unregistered
from assets.resources import KappaSettings
from assets.runs import run_state
from assets.tables import table_key
from assets.versions.jobs import promote_version
from assets.versions.metadata import change_metadata, declared_change, overview_metadata
from streaming.dagster_names import (
    FINGERPRINT_TAG,
    LIVE_TAG,
    PIPELINE_TAG,
    REASON_TAG,
    ROLE_TAG,
    VERSION_TAG,
    deploy_op_name,
    versions_partitions_name,
)
from streaming.define.pipeline import Pipeline
from streaming.define.registry import registry
from streaming.errors import KappaError
from streaming.settings import Settings
from streaming.versions.change import VersionChange, change_from_live
from streaming.versions.comparable import deployed_versions
from streaming.versions.decisions import RunState, candidate_to_launch, comparison_to_run
from streaming.versions.overview import overview


def version_partition_requests(
    instance: DagsterInstance, settings: Settings
) -> list[AddDynamicPartitionsRequest]:
    """Every version of every pipeline that is not a partition of its table yet: the declared
    version (so it can be launched from the asset page), and each one with state."""
    requests = []
    for name, pipeline in sorted(registry(settings.pipelines).items()):
        versions = {pipeline.version, *deployed_versions(settings.home, name)}
        missing = unregistered(instance, name, versions)
        if missing:
            requests.append(
                AddDynamicPartitionsRequest(versions_partitions_name(name), partition_keys=missing)
            )
    return requests


def new_version_sensor(deploy_jobs: Mapping[str, Any], interval_s: int) -> SensorDefinition:
    """``deploy_jobs``: each pipeline's ``deploy_<pipeline>`` asset job, by pipeline name;
    ``interval_s``: the least time between two evaluations."""

    @sensor(
        name="new_version_sensor",
        jobs=list(deploy_jobs.values()),
        minimum_interval_seconds=interval_s,
        default_status=DefaultSensorStatus.RUNNING,
        description="Keeps every version a partition of its table, and starts a pipeline's "
        "newly declared version side by side with the live one.",
    )
    def _sensor(context: SensorEvaluationContext, kappa: KappaSettings) -> SensorResult:
        settings = kappa.load()
        requests, reasons = [], []
        cursor = json.loads(context.cursor) if context.cursor else {}
        events = []
        for name, pipeline in sorted(registry(settings.pipelines).items()):
            event = _change_observation(context, settings, pipeline, cursor)
            if event is not None:
                events.append(event)
            tags = {
                PIPELINE_TAG: name,
                VERSION_TAG: pipeline.version,
                FINGERPRINT_TAG: pipeline.fingerprint,
            }
            job_name = deploy_jobs[name].name
            decision = candidate_to_launch(
                settings, pipeline, run_state(context.instance, job_name, tags)
            )
            context.log.info(decision.reason)
            reasons.append(decision.reason)
            if decision.act:
                config = {"starting_offsets": "earliest"}
                requests.append(
                    RunRequest(
                        job_name=job_name,
                        partition_key=pipeline.version,
                        run_config={"ops": {deploy_op_name(name): {"config": config}}},
                        tags={**tags, ROLE_TAG: "candidate", REASON_TAG: decision.reason},
                    )
                )
        return SensorResult(
            run_requests=requests,
            dynamic_partitions_requests=version_partition_requests(context.instance, settings),
            skip_reason=None if requests else "; ".join(reasons),
            cursor=json.dumps(cursor),
            asset_events=events,
        )

    return _sensor


def _change_observation(
    context: SensorEvaluationContext,
    settings: Settings,
    pipeline: Pipeline,
    cursor: dict[str, str],
) -> AssetObservation | None:
    """The declared version's change from the live one, on its partition, when it is a
    partition already and what it says changed since the last report (``cursor``: per
    pipeline, a digest of the last one)."""
    key = table_key(pipeline.name)
    if unregistered(context.instance, pipeline.name, [pipeline.version]):
        return None  # reported at a later tick, once the partition is there
    try:
        change = declared_change(context.instance, key, settings, pipeline)
    except KappaError as exc:
        context.log.warning(f"{pipeline.name}: what {pipeline.version} changes is unknown: {exc}")
        return None
    if change is None:
        return None
    metadata = change_metadata(change)
    # Reported again when the change does, or an estimate's leading digit moves (the log grows
    # all the time: a report per tick would bury the others).
    costs = change.costs
    rough = "" if costs is None else f"{costs.full_replay_s:.1g} {costs.forward_only_s:.1g}"
    shown = change.model_dump_json(exclude={"costs"}) + rough
    digest = hashlib.sha256(shown.encode()).hexdigest()[:16]
    if cursor.get(pipeline.name) == digest:
        return None
    cursor[pipeline.name] = digest
    context.log.info(f"{pipeline.name} {pipeline.version}: {change.summary()}")
    return AssetObservation(asset_key=key, partition=pipeline.version, metadata=metadata)


def candidate_sensor(interval_s: int) -> SensorDefinition:
    """``interval_s``: the least time between two evaluations."""
    return sensor(
        name="candidate_sensor",
        jobs=[promote_version],
        minimum_interval_seconds=interval_s,
        default_status=DefaultSensorStatus.RUNNING,
        description="Compares a caught-up candidate with the live version, then promotes it or "
        "waits per the pipeline's policy; keeps the versions overview current.",
    )(_candidates)


def _candidates(context: SensorEvaluationContext, kappa: KappaSettings) -> SensorResult:
    settings = kappa.load()
    cursor = json.loads(context.cursor) if context.cursor else {}
    requests, reasons, events = [], [], []
    for name, pipeline in sorted(registry(settings.pipelines).items()):
        view = overview(settings, name, _change_or_none(context, settings, pipeline))
        metadata = overview_metadata(view)
        digest = hashlib.sha256(repr(sorted(metadata.items())).encode()).hexdigest()[:16]
        if view.live_version and cursor.get(name) != digest:
            events.append(
                AssetObservation(
                    asset_key=table_key(name), partition=view.live_version, metadata=metadata
                )
            )
            cursor[name] = digest
        candidate = {PIPELINE_TAG: name, VERSION_TAG: pipeline.version}
        decision = comparison_to_run(
            settings, pipeline, partial(_comparison_runs, context.instance, candidate)
        )
        tags = {**candidate, LIVE_TAG: decision.live or ""}
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
                    tags={**tags, REASON_TAG: decision.reason},
                )
            )
    return SensorResult(
        run_requests=requests,
        skip_reason=None if requests else "; ".join(reasons),
        cursor=json.dumps(cursor),
        asset_events=events,
    )


def _change_or_none(
    context: SensorEvaluationContext, settings: Settings, pipeline: Pipeline
) -> VersionChange | None:
    """The declared version's change from the live one, for the overview (without costs)."""
    try:
        return change_from_live(settings, pipeline)
    except KappaError as exc:
        context.log.warning(f"{pipeline.name}: what {pipeline.version} changes is unknown: {exc}")
        return None


def _comparison_runs(
    instance: DagsterInstance, candidate: Mapping[str, str], live: str
) -> RunState:
    """The state of the latest promote_version run of ``candidate`` against ``live``."""
    return run_state(instance, promote_version.name, {**candidate, LIVE_TAG: live})
