"""`kappa reset`: deletes what was derived from the log, only once confirmed, never under a
running deployment."""

from __future__ import annotations

import pytest

from kappa.reset import ResetRefusedError, reset
from streaming.deployment import Deployment
from streaming.home import Home

# Written out here, independently of Home's own list: what a reset must delete and keep.
DERIVED = [
    "tables/customers__v1",
    "checkpoints/customers__v1",
    "dead_letters/customers__v1",
    "state/customers__v1",
    "code",
    "live",
    "alignment",
    "forward_only",
    "quality",
    "cuts",
]
KEPT = ["broker/data", "logs", "dagster", "run"]
DEPLOYMENT_LOG = "logs/customers__v1.log"  # beside the platform's own logs, which stay


def _home(tmp_path) -> Home:  # type: ignore[no-untyped-def]
    home = Home(tmp_path / "home")
    for name in [*DERIVED, *KEPT]:
        (home.root / name).mkdir(parents=True)
        (home.root / name / "file").write_text("x")
    (home.root / DEPLOYMENT_LOG).write_text("x")
    return home


def test_declined_confirmation_deletes_nothing(tmp_path):
    home = _home(tmp_path)
    shown: list[str] = []

    assert reset(home, lambda summary: shown.append(summary) or False) is None

    assert all((home.root / name / "file").exists() for name in DERIVED + KEPT)
    assert "customers__v1" in shown[0]


def test_confirmed_reset_deletes_derived_state_and_keeps_the_log(tmp_path):
    home = _home(tmp_path)

    deleted = reset(home, lambda summary: True)

    expected = {n.split("/")[0] for n in DERIVED} | {DEPLOYMENT_LOG}
    assert sorted(str(p.relative_to(home.root)) for p in deleted) == sorted(expected)
    assert not any((home.root / name).exists() for name in [*DERIVED, DEPLOYMENT_LOG])
    assert all((home.root / name / "file").exists() for name in KEPT)


def test_refused_while_a_deployment_runs(tmp_path):
    home = _home(tmp_path)
    lock = Deployment("customers", "v1", home).lock
    lock.acquire("customers__v1")
    try:
        with pytest.raises(ResetRefusedError, match="customers__v1 are running"):
            reset(home, lambda summary: True)
    finally:
        lock.release()
    assert (home.root / "tables" / "customers__v1" / "file").exists()
