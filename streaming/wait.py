"""Waiting on a condition with a deadline (never a fixed sleep standing in for synchronisation)."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_until(predicate: Callable[[], object], timeout_s: float, interval_s: float = 0.2) -> bool:
    """Poll ``predicate`` until it is true or ``timeout_s`` passes; True if it became true."""
    deadline = time.monotonic() + timeout_s
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval_s)
