"""Retiring a version: stop its deployment wherever it runs, then delete its state."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path

from streaming.deployment import Deployment
from streaming.deployment.lock import DeploymentBusyError
from streaming.errors import VersionError
from streaming.settings import Settings
from streaming.versions.live_pointer import live_version
from streaming.wait import wait_until

STOP_TIMEOUT_S = 90.0


class RetireRefusedError(VersionError):
    """The version is live, or still running."""


def refuse_if_live(deployment: Deployment) -> None:
    if live_version(deployment.home, deployment.pipeline) == deployment.version:
        msg = f"{deployment.id} is live; promote another version before retiring it"
        raise RetireRefusedError(msg)


def retire(deployment: Deployment) -> list[Path]:
    """Delete every file of a non-live, stopped deployment (``Deployment.owned_paths``). Its
    version name can then be deployed afresh, with the current code."""
    refuse_if_live(deployment)
    holder = deployment.lock.holder()
    if holder is not None:
        msg = f"{deployment.id} is running (pid {holder.get('pid')}); stop it first"
        raise DeploymentBusyError(msg)
    return deployment.remove()


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
    lock = deployment.lock
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
