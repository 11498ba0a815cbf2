"""`kappa reset`: start over from the log as it is, after the broker lost (part of) it.

Deletes everything derived from the log under the platform home: tables, dead letters,
checkpoints, pinned code, live pointers with their history, follow-live state, quality results
and deployment locks. The log itself (the broker's object store), the logs and Dagster's
history stay. Refused while any deployment runs.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from kappa.errors import KappaError
from kappa.settings import Settings
from streaming.lock import DeploymentLock

# Every directory under the home that holds state derived from the log.
DERIVED_STATE = (
    "tables",
    "dead_letters",
    "checkpoints",
    "code",
    "live",
    "alignment",
    "quality",
    "locks",
)


class ResetRefusedError(KappaError):
    """A reset would pull state from under a running deployment."""


def derived_state(settings: Settings) -> list[Path]:
    """The directories a reset deletes that exist now."""
    return [settings.home / name for name in DERIVED_STATE if (settings.home / name).exists()]


def deployments_on_disk(settings: Settings) -> list[str]:
    names: set[str] = set()
    for kind in ("tables", "checkpoints"):
        folder = settings.home / kind
        if folder.is_dir():
            names.update(p.name for p in folder.iterdir() if "__" in p.name)
    return sorted(names)


def running_deployments(settings: Settings) -> list[str]:
    locks = settings.home / "locks"
    if not locks.is_dir():
        return []
    held = (p for p in sorted(locks.glob("*.lock")) if DeploymentLock(p).holder() is not None)
    return [p.stem for p in held]


def reset(settings: Settings, confirm: Callable[[str], bool]) -> list[Path] | None:
    """Delete the derived state once ``confirm(summary)`` agrees; returns what was deleted
    (empty: nothing to delete), or None when the confirmation was refused.

    Raises:
        ResetRefusedError: a deployment is running; stop it (or the platform) first.
    """
    running = running_deployments(settings)
    if running:
        msg = (
            f"deployment(s) {', '.join(running)} are running; stop them first (`kappa stop "
            "PIPELINE`, or Ctrl-C on `kappa up`) and run `kappa reset` again"
        )
        raise ResetRefusedError(msg)
    targets = derived_state(settings)
    if not targets:
        return []
    deployments = deployments_on_disk(settings)
    summary = (
        f"This deletes the tables, checkpoints, dead letters, pinned code and live pointers of "
        f"{len(deployments)} deployment(s) ({', '.join(deployments) or 'none'}) under "
        f"{settings.home}: {', '.join(p.name for p in targets)}. The log is kept; every table "
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
