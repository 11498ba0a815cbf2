"""Health of streaming deployments as asset checks: lag and freshness (stalled or not), per
version (partition).

The running deployment reports both checks with every progress report, so they complete on its
cadence, and once more when it fails or is stopped (``freshness`` turns red on a failure); the
same checks can be executed on demand from the UI for a version, evaluating the latest health
that version reported.
"""

# No `from __future__ import annotations`: Dagster inspects the check functions' annotations.

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from dagster import (
    AssetCheckEvaluation,
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetCheckSeverity,
    AssetKey,
    AssetRecordsFilter,
    DagsterInstance,
    asset_check,
)

from assets.partitions import check_target, version_partitions
from streaming.run.health import FAILED, LAGGING, STALLED, STOPPED
from streaming.run.reporting import Snapshot

LAG_CHECK = "lag"
FRESHNESS_CHECK = "freshness"


def lag_ok(state: str) -> bool:
    return state != LAGGING


def fresh_ok(state: str) -> bool:
    return state not in (STALLED, FAILED)


_FRESHNESS = {
    STALLED: "no batch committed while input is waiting",
    FAILED: "the deployment failed: no batch is committed until it runs again",
    STOPPED: "the deployment was stopped",
}


def check_evaluations(
    instance: DagsterInstance, asset_key: AssetKey, snapshot: Snapshot
) -> Iterator[AssetCheckEvaluation]:
    """The lag and freshness verdicts of one progress report, on the reporting version."""
    return health_evaluations(
        instance, asset_key, snapshot.version, snapshot.state, snapshot.total_lag, _age(snapshot)
    )


def health_evaluations(
    instance: DagsterInstance,
    asset_key: AssetKey,
    version: str,
    state: str,
    total_lag: int,
    seconds_since_last_batch: float,
) -> Iterator[AssetCheckEvaluation]:
    """The lag and freshness verdicts of a version in ``state``."""
    about = {
        "partition": version,
        "target_materialization_data": check_target(instance, asset_key, version),
    }
    yield AssetCheckEvaluation(
        **about,
        asset_key=asset_key,
        check_name=LAG_CHECK,
        passed=lag_ok(state),
        severity=AssetCheckSeverity.WARN,
        metadata={"total_lag": total_lag, "state": state},
        description=f"{total_lag} records behind the log ({state})",
    )
    yield AssetCheckEvaluation(
        **about,
        asset_key=asset_key,
        check_name=FRESHNESS_CHECK,
        passed=fresh_ok(state),
        severity=AssetCheckSeverity.WARN,
        metadata={
            "seconds_since_last_batch": seconds_since_last_batch,
            "state": state,
            "total_lag": total_lag,
        },
        description=_FRESHNESS.get(state, "batches are being committed"),
    )


def _age(snapshot: Snapshot) -> float:
    if snapshot.last_batch_at is None:
        return round(snapshot.duration_s, 1)
    return round(max(0.0, snapshot.taken_at - snapshot.last_batch_at), 1)


def latest_health(instance: DagsterInstance, key: AssetKey, version: str) -> Mapping[str, Any]:
    """The latest health report of a version: its newest materialization or observation that
    carries a ``state`` (version-job observations carry none)."""
    where = AssetRecordsFilter(asset_key=key, asset_partitions=[version])
    reports = [
        (r.timestamp, r.asset_materialization.metadata)
        for r in instance.fetch_materializations(where, limit=1).records
        if r.asset_materialization
    ]
    reports += [
        (r.timestamp, r.asset_observation.metadata)
        for r in instance.fetch_observations(where, limit=20).records
        if r.asset_observation and "state" in (r.asset_observation.metadata or {})
    ][:1]
    if not reports:
        return {}
    _, metadata = max(reports, key=lambda report: report[0])
    return {k: getattr(v, "value", v) for k, v in (metadata or {}).items()}


_ON_DEMAND: tuple[tuple[str, str, Callable[[str], bool]], ...] = (
    (
        LAG_CHECK,
        "The deployment is not lagging behind the log (lag above the threshold and not shrinking).",
        lag_ok,
    ),
    (
        FRESHNESS_CHECK,
        "The deployment is not stalled (input waiting and no batch committed for longer than "
        "the stall threshold).",
        fresh_ok,
    ),
)


def health_checks(key: AssetKey, pipeline: str) -> list[AssetChecksDefinition]:
    """The same checks on demand: they judge the latest health a version's deployment reported."""

    def build(name: str, description: str, ok: Callable[[str], bool]) -> AssetChecksDefinition:
        @asset_check(
            asset=key,
            name=name,
            description=description,
            partitions_def=version_partitions(pipeline),
        )
        def _check(context: AssetCheckExecutionContext) -> AssetCheckResult:
            health = latest_health(context.instance, key, context.partition_key)
            state = str(health.get("state", "unknown"))
            return AssetCheckResult(
                passed=ok(state),
                severity=AssetCheckSeverity.WARN,
                metadata={"state": state, "total_lag": int(health.get("total_lag", 0))},
                description=f"latest report of {context.partition_key}: {state}",
            )

        return _check

    return [build(*spec) for spec in _ON_DEMAND]
