"""`kappa reset`: start over from the log as it is, after the broker lost (part of) it.

Deletes everything derived from the log under the platform home: every deployment's files, the
live pointers with their history and the quality results (``streaming.deployment.derived_state``
says which). The log itself (the embedded broker's data), the platform's own process logs and
Dagster's history stay. Refused while any deployment runs.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from kappa.errors import OperatorError
from streaming.deployment import deployments_on_disk, derived_state
from streaming.home import Home


class ResetRefusedError(OperatorError):
    """A reset would pull state from under a running deployment."""


def running_deployments(home: Home) -> list[str]:
    """The deployments whose lock is held by a live process."""
    return [d.id for d in deployments_on_disk(home) if d.lock.holder() is not None]


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
    targets = [path for path in derived_state(home) if path.exists()]
    if not targets:
        return []
    deployments = [d.id for d in deployments_on_disk(home)]
    summary = (
        f"This deletes the tables, checkpoints, operator state, dead letters, pinned code, logs "
        f"and live pointers of {len(deployments)} deployment(s) "
        f"({', '.join(deployments) or 'none'}) under {home}: "
        f"{', '.join(str(p.relative_to(home.root)) for p in targets)}. The log is kept; every "
        "table is rebuilt from it by its next deployment."
    )
    if not confirm(summary):
        return None
    for path in targets:
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()
    return targets
