"""A hosted deployment's reports as its clients read them: numbered, each as it was made."""

from __future__ import annotations

from streaming.engine.hosted import EventLog


def test_reports_come_back_as_made_with_the_next_number_beside_them():
    log = EventLog(kept=2)
    for message in ("a", "b", "c"):
        log.warning(message)
    events, following = log.since(0)
    # The oldest report is gone (two kept); the rest carry only what the reporter said, so a
    # reader parses them as it parses a deployment's own process's reports.
    assert events == [{"kind": "warning", "message": "b"}, {"kind": "warning", "message": "c"}]
    assert following == 3
    assert log.since(2) == ([{"kind": "warning", "message": "c"}], 3)
    assert log.since(3) == ([], 3)
