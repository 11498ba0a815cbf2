from __future__ import annotations

from streaming.run.health import (
    CATCHING_UP,
    LAGGING,
    RUNNING,
    STALLED,
    HealthThresholds,
    classify,
)

T = HealthThresholds(lag_records=100, stall_after_s=30)


def test_small_lag_is_running():
    assert classify(50, 60, 1.0, T) == RUNNING
    assert classify(0, None, 500.0, T) == RUNNING  # idle, nothing waiting: not stalled


def test_large_lag_shrinking_is_catching_up_growing_is_lagging():
    assert classify(5000, None, 1.0, T) == CATCHING_UP
    assert classify(4000, 5000, 1.0, T) == CATCHING_UP
    assert classify(6000, 5000, 1.0, T) == LAGGING
    assert classify(6000, 6000, 1.0, T) == LAGGING


def test_input_waiting_without_progress_is_stalled():
    assert classify(1, 1, 31.0, T) == STALLED
    assert classify(5000, 6000, 31.0, T) == STALLED
