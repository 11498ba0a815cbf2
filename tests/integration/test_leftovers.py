"""Retiring a version and ``kappa reset`` leave no file of theirs behind: the platform home is
listed before a version first runs and after it is retired, before anything runs and after a
reset. The version runs as a user runs it (``kappa run``: pinned code, lock, live pointer,
checkpoint, operator state), is validated and compared, so every kind of file it owns exists."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.support.producing import send, transactions
from tests.integration.helpers import kappa

pytestmark = [pytest.mark.integration, pytest.mark.slow(seconds=75)]

PIPELINE = "spend_hourly"  # stateful: it keeps operator state beside its table


def _files(home: Path) -> set[str]:
    return {str(p.relative_to(home)) for p in home.rglob("*") if p.is_file()}


def _named_after(home: Path, deployment: str) -> list[str]:
    """Every path under the home that carries the deployment's id, files and folders alike."""
    return sorted(str(p.relative_to(home)) for p in home.rglob(f"*{deployment}*"))


def _ok(settings, *args: str) -> str:  # type: ignore[no-untyped-def]
    result = kappa(settings, *args)
    assert result.returncode == 0, (args, result.stderr[-3000:])
    return result.stdout


def test_retire_and_reset_leave_no_file_of_theirs_behind(settings, broker):
    home = settings.home.root
    send(settings, transactions(400, seed=31))
    before_anything = _files(home) if home.exists() else set()

    _ok(settings, "run", PIPELINE, "--until-caught-up")  # v1, the first: live
    with_v1 = _files(home)
    _ok(settings, "run", PIPELINE, "--version", "v2", "--until-caught-up")
    _ok(settings, "quality", "report", PIPELINE, "--version", "v2", "--run")
    _ok(settings, "diff", PIPELINE, "v1", "v2")
    v2 = f"{PIPELINE}__v2"
    owned = _named_after(home, v2)
    for kind in ("tables", "checkpoints", "state", "code", "locks", "alignment", "quality"):
        assert any(path.startswith(f"{kind}/") for path in owned), (kind, owned)

    _ok(settings, "retire", PIPELINE, "v2")

    assert _named_after(home, v2) == []
    assert _files(home) == with_v1

    reset = kappa(settings, "reset", "--yes")
    assert reset.returncode == 0, reset.stderr

    assert _named_after(home, PIPELINE) == []
    assert _files(home) == before_anything
