"""`kappa reset`: start over from the log as it is, after the broker lost (part of) it.

Deletes everything derived from the log under the platform home (tables, dead letters,
checkpoints, pinned code, live pointers with their history, alignment caps, quality results and
deployment locks: ``Home.derived_state``). The log itself (the embedded broker's data), the
processes' logs and Dagster's history stay. Refused while any deployment runs.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from kappa.errors import OperatorError
from streaming.home import Home
from streaming.run.lock import DeploymentLock


class ResetRefusedError(OperatorError):
    """A reset would pull state from under a running deployment."""


def deployments_on_disk(home: Home) -> list[str]:
    """The deployments (``<pipeline>__<version>``) that have a table or a checkpoint."""
    names: set[str] = set()
    for folder in (home.tables, home.checkpoints):
        if folder.is_dir():
            names.update(p.name for p in folder.iterdir() if "__" in p.name)
    return sorted(names)


def running_deployments(home: Home) -> list[str]:
    """The deployments whose lock is held by a live process."""
    if not home.locks.is_dir():
        return []
    held = (p for p in sorted(home.locks.glob("*.lock")) if DeploymentLock(p).holder() is not None)
    return [p.stem for p in held]


def reset(home: Home, confirm: Callable[[str], bool]) -> list[Path] | None:
    """Delete the derived state once ``confirm(summary)`` agrees; returns what was deleted
    (empty: nothing to delete), or None when the confirmation was refused.

    Raises:
        ResetRefusedError: a deployment is running; stop it (or the platform) first.
    """
    running = running_deployments(home)
    if running:
        msg = (
            f"deployment(s) {', '.join(running)} are running; stop them first (`kappa stop "
            "PIPELINE`, or Ctrl-C on `kappa up`) and run `kappa reset` again"
        )
        raise ResetRefusedError(msg)
    targets = [path for path in home.derived_state() if path.exists()]
    if not targets:
        return []
    deployments = deployments_on_disk(home)
    summary = (
        f"This deletes the tables, checkpoints, dead letters, pinned code and live pointers of "
        f"{len(deployments)} deployment(s) ({', '.join(deployments) or 'none'}) under "
        f"{home}: {', '.join(p.name for p in targets)}. The log is kept; every table "
        "is rebuilt from it by its next deployment."
    )
    if not confirm(summary):
        return None
    for path in targets:
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()
    return targets
