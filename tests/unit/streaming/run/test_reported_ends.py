"""A health report reuses the ends the source measured at its last trigger, while recent."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from streaming.run.reporting import reported_ends


def _progress(age_s: float, latest: dict | None) -> dict:
    stamp = datetime.now(UTC) - timedelta(seconds=age_s)
    return {
        "timestamp": stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "sources": [{"latestOffset": json.dumps(latest) if latest is not None else None}],
    }


def test_a_recent_trigger_s_ends_are_reused():
    ends = {"a": {"0": 7, "1": 9}, "b": {"0": 3}}
    assert reported_ends(_progress(1, ends), ("a", "b"), 10) == {"a": {0: 7, 1: 9}, "b": {0: 3}}


def test_old_or_missing_ends_are_not():
    ends = {"a": {"0": 7}}
    assert reported_ends(_progress(30, ends), ("a",), 10) is None
    assert reported_ends(_progress(1, None), ("a",), 10) is None
    assert reported_ends(_progress(1, ends), ("a", "b"), 10) is None
    assert reported_ends(None, ("a",), 10) is None
