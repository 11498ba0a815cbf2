from __future__ import annotations

import itertools
import threading

import pytest

from streaming.errors import InvalidNameError
from streaming.versions.live_pointer import (
    LiveSwitchConflictError,
    history,
    live_table_path,
    live_version,
    switch,
)


def test_switches_are_durable_and_audited(tmp_path):
    assert live_version(tmp_path, "customers") is None
    switch(tmp_path, "customers", "v1", "first deploy")
    switch(tmp_path, "customers", "v2", "promote", comparison={"passed": True})
    assert live_version(tmp_path, "customers") == "v2"
    assert live_table_path(tmp_path, "customers") == tmp_path / "tables" / "customers__v2"
    log = history(tmp_path, "customers")
    assert [(s.from_version, s.to_version, s.reason) for s in log] == [
        (None, "v1", "first deploy"),
        ("v1", "v2", "promote"),
    ]
    assert log[1].comparison == {"passed": True}


def test_a_stale_expectation_is_refused_and_changes_nothing(tmp_path):
    switch(tmp_path, "customers", "v1", "deploy")
    switch(tmp_path, "customers", "v2", "promote", expect_from="v1")
    with pytest.raises(LiveSwitchConflictError, match="someone else switched"):
        switch(tmp_path, "customers", "v1", "rollback", expect_from="v3")
    assert live_version(tmp_path, "customers") == "v2"
    assert len(history(tmp_path, "customers")) == 2


def test_concurrent_promote_and_rollback_leave_one_consistent_pointer(tmp_path):
    switch(tmp_path, "customers", "v1", "deploy")
    seen: list[str | None] = []
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            seen.append(live_version(tmp_path, "customers"))

    def flip(to: str) -> None:
        for _ in range(50):
            switch(tmp_path, "customers", to, f"to {to}")

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
    log = history(tmp_path, "customers")
    assert len(log) == 101
    for before, after in itertools.pairwise(log):
        assert after.from_version == before.to_version  # each switch saw the previous one
    assert live_version(tmp_path, "customers") == log[-1].to_version


def test_bad_names_never_touch_the_filesystem(tmp_path):
    with pytest.raises(InvalidNameError):
        switch(tmp_path, "../etc", "v1", "x")
    with pytest.raises(InvalidNameError):
        switch(tmp_path, "customers", "../../v1", "x")
    assert list(tmp_path.rglob("*")) == []
