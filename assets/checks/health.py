"""Health of streaming deployments as asset checks: lag and freshness (stalled or not).

The running deployment reports both checks with every progress report; the same checks can be
executed on demand from the UI, evaluating the latest reported health.
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
    asset_check,
)

from streaming.run.health import FAILED, LAGGING, STALLED
from streaming.run.reporting import Snapshot

LAG_CHECK = "lag"
FRESHNESS_CHECK = "freshness"


def lag_ok(state: str) -> bool:
    return state != LAGGING


def fresh_ok(state: str) -> bool:
    return state not in (STALLED, FAILED)


def check_evaluations(asset_key: AssetKey, snapshot: Snapshot) -> Iterator[AssetCheckEvaluation]:
    """The lag and freshness verdicts for one progress report."""
    yield AssetCheckEvaluation(
        asset_key=asset_key,
        check_name=LAG_CHECK,
        passed=lag_ok(snapshot.state),
        severity=AssetCheckSeverity.WARN,
        metadata={"total_lag": snapshot.total_lag, "state": snapshot.state},
        description=f"{snapshot.total_lag} records behind the log ({snapshot.state})",
    )
    yield AssetCheckEvaluation(
        asset_key=asset_key,
        check_name=FRESHNESS_CHECK,
        passed=fresh_ok(snapshot.state),
        severity=AssetCheckSeverity.WARN,
        metadata={
            "seconds_since_last_batch": _age(snapshot),
            "state": snapshot.state,
            "total_lag": snapshot.total_lag,
        },
        description="no batch committed while input is waiting"
        if snapshot.state == STALLED
        else "batches are being committed",
    )


def _age(snapshot: Snapshot) -> float:
    if snapshot.last_batch_at is None:
        return round(snapshot.duration_s, 1)
    return round(max(0.0, snapshot.taken_at - snapshot.last_batch_at), 1)


def _latest_health(context: AssetCheckExecutionContext, key: AssetKey) -> Mapping[str, Any]:
    """The latest health report (versions-overview observations on the table carry no state)."""
    for record in context.instance.fetch_observations(key, limit=20).records:
        metadata = record.asset_observation.metadata or {}
        if "state" in metadata:
            return {k: getattr(v, "value", v) for k, v in metadata.items()}
    return {}


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


def health_checks(key: AssetKey) -> list[AssetChecksDefinition]:
    """The same checks on demand: they judge the latest health the deployment reported."""

    def build(name: str, description: str, ok: Callable[[str], bool]) -> AssetChecksDefinition:
        @asset_check(asset=key, name=name, description=description)
        def _check(context: AssetCheckExecutionContext) -> AssetCheckResult:
            health = _latest_health(context, key)
            state = str(health.get("state", "unknown"))
            return AssetCheckResult(
                passed=ok(state),
                severity=AssetCheckSeverity.WARN,
                metadata={"state": state, "total_lag": int(health.get("total_lag", 0))},
            )

        return _check

    return [build(*spec) for spec in _ON_DEMAND]
