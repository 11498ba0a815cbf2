from __future__ import annotations

import itertools
import threading

import pytest

from streaming.errors import InvalidNameError
from streaming.home import Home
from streaming.versions.live_pointer import (
    LiveSwitchConflictError,
    history,
    live_table_path,
    live_version,
    switch,
)


@pytest.fixture
def home(tmp_path) -> Home:  # type: ignore[no-untyped-def]
    return Home(tmp_path)


def test_switches_are_durable_and_audited(home):
    assert live_version(home, "customers") is None
    switch(home, "customers", "v1", "first deploy")
    switch(home, "customers", "v2", "promote", comparison={"passed": True})
    assert live_version(home, "customers") == "v2"
    assert live_table_path(home, "customers") == home.root / "tables" / "customers__v2"
    log = history(home, "customers")
    assert [(s.from_version, s.to_version, s.reason) for s in log] == [
        (None, "v1", "first deploy"),
        ("v1", "v2", "promote"),
    ]
    assert log[1].comparison == {"passed": True}


def test_a_stale_expectation_is_refused_and_changes_nothing(home):
    switch(home, "customers", "v1", "deploy")
    switch(home, "customers", "v2", "promote", expect_from="v1")
    with pytest.raises(LiveSwitchConflictError, match="someone else switched"):
        switch(home, "customers", "v1", "rollback", expect_from="v3")
    assert live_version(home, "customers") == "v2"
    assert len(history(home, "customers")) == 2


def test_concurrent_promote_and_rollback_leave_one_consistent_pointer(home):
    switch(home, "customers", "v1", "deploy")
    seen: list[str | None] = []
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            seen.append(live_version(home, "customers"))

    def flip(to: str) -> None:
        for _ in range(50):
            switch(home, "customers", to, f"to {to}")

    threads = [threading.Thread(target=reader)] + [
        threading.Thread(target=flip, args=(v,)) for v in ("v1", "v2")
    ]
    for t in threads:
        t.start()
    for t in threads[1:]:
        t.join()
    stop.set()
    threads[0].join()
    assert set(seen) <= {"v1", "v2"}  # never missing, never garbage
    log = history(home, "customers")
    assert len(log) == 101
    for before, after in itertools.pairwise(log):
        assert after.from_version == before.to_version  # each switch saw the previous one
    assert live_version(home, "customers") == log[-1].to_version


def test_bad_names_never_touch_the_filesystem(home):
    with pytest.raises(InvalidNameError):
        switch(home, "../etc", "v1", "x")
    with pytest.raises(InvalidNameError):
        switch(home, "customers", "../../v1", "x")
    assert list(home.root.rglob("*")) == []
