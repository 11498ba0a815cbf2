"""A hosted deployment's reports as its clients read them: numbered, each as it was made."""

from __future__ import annotations

import threading
import time

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


def _later(seconds: float, action) -> threading.Thread:  # type: ignore[no-untyped-def]
    thread = threading.Timer(seconds, action)
    thread.start()
    return thread


def test_a_waiting_reader_is_answered_by_the_next_report_or_change_not_by_its_deadline():
    log = EventLog()
    log.warning("a")
    started = time.monotonic()
    assert log.since(0, wait_s=30) == ([{"kind": "warning", "message": "a"}], 1)  # news already
    _later(0.2, lambda: log.warning("b"))
    assert log.since(1, wait_s=30) == ([{"kind": "warning", "message": "b"}], 2)
    _later(0.2, log.touch)  # a change of state (a stop, the query's end) wakes it too
    assert log.since(2, wait_s=30) == ([], 2)
    assert time.monotonic() - started < 10


def test_a_reader_of_an_ended_deployment_is_not_kept_waiting():
    log = EventLog()
    started = time.monotonic()
    assert log.since(0, wait_s=30, ended=lambda: True) == ([], 0)
    assert log.since(0, wait_s=0.3) == ([], 0)  # nothing new: the deadline answers
    assert 0.3 <= time.monotonic() - started < 10
