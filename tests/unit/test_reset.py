"""`kappa reset`: deletes what was derived from the log, only once confirmed, never under a
running deployment."""

from __future__ import annotations

import pytest

from kappa.reset import ResetRefusedError, reset
from streaming.lock import DeploymentLock
from tests.conftest import make_settings

DERIVED = ["tables/customers__v1", "checkpoints/customers__v1", "code", "live", "quality"]
KEPT = ["object_store/data", "logs", "dagster", "run"]


def _home(tmp_path):  # type: ignore[no-untyped-def]
    settings = make_settings(tmp_path / "home")
    for name in [*DERIVED, *KEPT]:
        (settings.home / name).mkdir(parents=True)
        (settings.home / name / "file").write_text("x")
    return settings


def test_declined_confirmation_deletes_nothing(tmp_path):
    settings = _home(tmp_path)
    shown: list[str] = []

    assert reset(settings, lambda summary: shown.append(summary) or False) is None

    assert all((settings.home / name / "file").exists() for name in DERIVED + KEPT)
    assert "customers__v1" in shown[0]


def test_confirmed_reset_deletes_derived_state_and_keeps_the_log(tmp_path):
    settings = _home(tmp_path)

    deleted = reset(settings, lambda summary: True)

    assert sorted(p.name for p in deleted) == ["checkpoints", "code", "live", "quality", "tables"]
    assert not any((settings.home / name).exists() for name in DERIVED)
    assert all((settings.home / name / "file").exists() for name in KEPT)


def test_refused_while_a_deployment_runs(tmp_path):
    settings = _home(tmp_path)
    lock = DeploymentLock(settings.home / "locks" / "customers__v1.lock")
    lock.acquire("customers__v1")
    try:
        with pytest.raises(ResetRefusedError, match="customers__v1 are running"):
            reset(settings, lambda summary: True)
    finally:
        lock.release()
    assert (settings.home / "tables" / "customers__v1" / "file").exists()
