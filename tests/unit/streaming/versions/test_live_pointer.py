from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import pytest

from bench.support.settings import private_settings
from streaming.deployment import Deployment
from streaming.errors import InvalidNameError
from streaming.home import Home
from streaming.versions import promotion
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


def _run_threads(*targets: Callable[[], None]) -> list[BaseException]:
    """Run ``targets`` in threads; return what they raised (a thread's exception is otherwise
    only a warning, and a failing thread would pass unnoticed)."""
    errors: list[BaseException] = []

    def guarded(target: Callable[[], None]) -> None:
        try:
            target()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(t,)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
        assert not t.is_alive(), "a switching thread hung (a lock never released?)"
    return errors


def test_concurrent_switches_leave_one_consistent_pointer(home):
    switch(home, "customers", "v1", "deploy")
    seen: list[str | None] = []
    flips_done = threading.Event()

    def reader() -> None:
        while not flips_done.is_set():
            seen.append(live_version(home, "customers"))
        seen.append(live_version(home, "customers"))

    def flips() -> None:
        try:
            assert not _run_threads(*(partial(_flip, home, v) for v in ("v1", "v2")))
        finally:
            flips_done.set()

    assert _run_threads(reader, flips) == []
    assert seen and set(seen) <= {"v1", "v2"}  # never missing, never garbage
    log = history(home, "customers")
    assert len(log) == 101
    for before, after in itertools.pairwise(log):
        assert after.from_version == before.to_version  # each switch saw the previous one
    assert live_version(home, "customers") == log[-1].to_version


def _flip(home: Home, to: str) -> None:
    for _ in range(50):
        switch(home, "customers", to, f"to {to}")


@dataclass(frozen=True)
class _CleanComparison:
    """What promote reads from a comparison that passed (the comparison itself is not tested)."""

    old_name: str
    passed: bool = True
    failures: tuple[str, ...] = ()
    docs_page: str = ""


def test_racing_promote_and_rollback_one_wins_the_other_changes_nothing(tmp_path, monkeypatch):
    """Both read the live version, then both switch: the compare-and-set lets exactly one win."""
    settings = private_settings(tmp_path / "home")
    for version in ("v1", "v2", "v3"):
        Deployment("customers", version, settings.home).table_path.mkdir(parents=True)
    switch(settings.home, "customers", "v1", "deploy")
    switch(settings.home, "customers", "v2", "promote")
    # Hold both callers between reading the live version and switching, so their reads are
    # equally stale whatever the thread scheduling.
    both_read = threading.Barrier(2, timeout=30)
    real_switch = promotion.switch

    def switch_after_both_read(*args, **kwargs):  # type: ignore[no-untyped-def]
        both_read.wait()
        return real_switch(*args, **kwargs)

    monkeypatch.setattr(promotion, "switch", switch_after_both_read)
    results: dict[str, object] = {}

    def promote_v3() -> None:
        results["promote"] = promotion.promote(
            settings, "customers", "v3", comparison=_CleanComparison(old_name="v2")
        ).switch

    def roll_back() -> None:
        results["rollback"] = promotion.rollback(settings, "customers")

    errors = _run_threads(promote_v3, roll_back)
    assert len(errors) == 1 and isinstance(errors[0], LiveSwitchConflictError), errors
    assert len(results) == 1
    winner = next(iter(results.values()))
    log = history(settings.home, "customers")
    assert [(s.from_version, s.to_version) for s in log[:2]] == [(None, "v1"), ("v1", "v2")]
    assert len(log) == 3 and log[2] == winner  # the loser left no trace
    assert log[2].from_version == "v2"
    assert live_version(settings.home, "customers") == log[2].to_version


def test_bad_names_never_touch_the_filesystem(home):
    with pytest.raises(InvalidNameError):
        switch(home, "../etc", "v1", "x")
    with pytest.raises(InvalidNameError):
        switch(home, "customers", "../../v1", "x")
    assert list(home.root.rglob("*")) == []


def test_a_rollback_goes_to_the_version_live_before_the_last_switch(tmp_path):
    settings = private_settings(tmp_path / "home")
    for version in ("v1", "v2", "v3"):
        Deployment("customers", version, settings.home).table_path.mkdir(parents=True)
    switch(settings.home, "customers", "v1", "first deployment")
    switch(settings.home, "customers", "v2", "promote")
    switch(settings.home, "customers", "v3", "promote")

    back = promotion.rollback(settings, "customers")

    assert (back.from_version, back.to_version) == ("v3", "v2")  # not v1, the first ever live
    assert live_version(settings.home, "customers") == "v2"
    assert history(settings.home, "customers")[-1].reason == "rollback"
