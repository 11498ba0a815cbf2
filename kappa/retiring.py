"""Retiring a version: stop its deployment wherever it runs, then delete its state."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path

from kappa.processes import wait_until
from kappa.settings import Settings
from streaming.deployment import Deployment
from streaming.lock import DeploymentBusyError, DeploymentLock
from streaming.versions import refuse_if_live, retire

STOP_TIMEOUT_S = 90.0


def stop_and_retire(
    settings: Settings,
    pipeline: str,
    version: str,
    cancel_run: Callable[[str], None],
    timeout_s: float = STOP_TIMEOUT_S,
) -> list[Path]:
    """Stop a non-live deployment (its Dagster run, or its process) and delete its state.

    Args:
        cancel_run: terminates a Dagster run by id (GraphQL from the CLI, the instance in a job).
    """
    deployment = Deployment(pipeline, version, settings.home)
    refuse_if_live(deployment)  # before stopping anything
    lock = DeploymentLock(deployment.lock_path)
    holder = lock.holder()
    if holder is not None:
        if holder.get("run_id"):
            cancel_run(str(holder["run_id"]))
        else:
            os.kill(int(holder["pid"]), signal.SIGINT)
        if not wait_until(lambda: lock.holder() is None, timeout_s, interval_s=0.5):
            msg = f"{deployment.id} did not stop within {timeout_s:.0f} s; stop it and retry"
            raise DeploymentBusyError(msg)
    return retire(deployment)
