"""Classifying a running deployment's health from its progress over time (pure functions)."""

from __future__ import annotations

from dataclasses import dataclass

RUNNING = "running"
CATCHING_UP = "catching_up"
LAGGING = "lagging"
STALLED = "stalled"
FAILED = "failed"
STOPPED = "stopped"
CAUGHT_UP = "caught_up"


@dataclass(frozen=True)
class HealthThresholds:
    """``lag_records``: lag above this is 'lagging' (or 'catching_up' while it shrinks).
    ``stall_after_s``: input waiting and no batch committed for this long is 'stalled'.
    """

    lag_records: int = 10_000
    stall_after_s: float = 60.0


def classify(
    total_lag: int,
    previous_lag: int | None,
    seconds_since_progress: float,
    thresholds: HealthThresholds,
) -> str:
    """The status of a live deployment.

    Args:
        total_lag: records in the log not yet in the table, now.
        previous_lag: the same at the previous report (None for the first report).
        seconds_since_progress: since the last committed batch (or the start).
    """
    if total_lag > 0 and seconds_since_progress >= thresholds.stall_after_s:
        return STALLED
    if total_lag > thresholds.lag_records:
        shrinking = previous_lag is not None and total_lag < previous_lag
        return CATCHING_UP if shrinking or previous_lag is None else LAGGING
    return RUNNING
