"""Which version of each pipeline is live: a durable, atomic, audited pointer.

The pointer is ``$KAPPA_HOME/live/<pipeline>.json``, replaced atomically (write a temporary file,
fsync, ``os.replace``), so a reader sees the old or the new version, never a mix. Every switch is
appended to ``<pipeline>.history.jsonl`` with time, from, to, reason and the comparison it relied
on. Switches are serialised by an exclusive file lock, so concurrent promote and rollback leave one
consistent pointer and a history that explains it. Code outside Dagster reads it with
:func:`live_version` / :func:`live_table_path`.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from streaming.atomic_file import write_atomically
from streaming.define.names import validate_pipeline_name, validate_version
from streaming.define.registry import get_pipeline
from streaming.deployment import Deployment
from streaming.errors import VersionError
from streaming.home import Home

# Spark tasks that publish import this module (through ``streaming.versions.publishing``): the
# settings' models (pydantic) are only a type here.
if TYPE_CHECKING:
    from streaming.settings import Settings


class NoLiveVersionError(VersionError, LookupError):
    """The pipeline has no live version yet."""


class LiveSwitchConflictError(VersionError):
    """Another switch changed the live version first; nothing was changed."""


@dataclass(frozen=True)
class Switch:
    """One change of the live pointer."""

    pipeline: str
    from_version: str | None
    to_version: str
    reason: str
    at: float = field(default_factory=time.time)
    comparison: dict[str, Any] | None = None
    actor: str = "kappa"


def pointer_path(home: Home, pipeline: str) -> Path:
    return home.live_pointer(validate_pipeline_name(pipeline))


def history_path(home: Home, pipeline: str) -> Path:
    return home.live_history(validate_pipeline_name(pipeline))


@dataclass(frozen=True)
class Live:
    """The live pointer: which version is live, and since when (each switch a new instant)."""

    version: str
    since: float


def read_live(home: Home, pipeline: str) -> Live | None:
    """The live pointer of ``pipeline``, or None when no version was ever made live."""
    try:
        data = json.loads(pointer_path(home, pipeline).read_text())
    except FileNotFoundError:
        return None
    return Live(str(data["version"]), float(data["since"]))


def live_version(home: Home, pipeline: str) -> str | None:
    """The live version of ``pipeline``, or None when none was ever made live."""
    live = read_live(home, pipeline)
    return None if live is None else live.version


def live_table_path(home: Home, pipeline: str, default_version: str | None = None) -> Path:
    """The Delta table readers of ``pipeline`` should use right now."""
    version = live_version(home, pipeline) or default_version
    if version is None:
        msg = f"pipeline {pipeline!r} has no live version yet"
        raise NoLiveVersionError(msg)
    return Deployment(pipeline, version, home).table_path


def serving_deployment(
    home: Home, pipeline: str, declared_version: str, version: str | None = None
) -> Deployment:
    """The deployment a reader of ``pipeline`` sees: ``version`` if given, else the live one,
    else the declared one (before any version went live)."""
    if version is None:
        version = live_version(home, pipeline) or declared_version
    return Deployment(pipeline, version, home)


def resolve_deployment(settings: Settings, name: str, version: str | None = None) -> Deployment:
    """The deployment a reader of pipeline ``name`` sees (:func:`serving_deployment`), with the
    declared version taken from the pipeline's module."""
    pipeline = get_pipeline(settings.pipelines, name)
    return serving_deployment(settings.home, pipeline.name, pipeline.version, version)


def history(home: Home, pipeline: str) -> list[Switch]:
    try:
        lines = history_path(home, pipeline).read_text().splitlines()
    except FileNotFoundError:
        return []
    return [Switch(**json.loads(line)) for line in lines if line.strip()]


@contextmanager
def pointer_held(home: Home, pipeline: str) -> Iterator[None]:
    """Hold the live pointer: no switch happens until the block ends (switches hold it too)."""
    home.live.mkdir(parents=True, exist_ok=True)
    fd = os.open(home.live_lock(pipeline), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def switch(
    home: Home,
    pipeline: str,
    to_version: str,
    reason: str,
    comparison: dict[str, Any] | None = None,
    expect_from: str | None = None,
    actor: str = "kappa",
) -> Switch:
    """Make ``to_version`` live. With ``expect_from``, only if that version is live now.

    Raises:
        LiveSwitchConflictError: ``expect_from`` is given and another version is live (a
            concurrent switch won); nothing changes.
    """
    validate_pipeline_name(pipeline)
    validate_version(to_version)
    with pointer_held(home, pipeline):
        current = live_version(home, pipeline)
        if expect_from is not None and current != expect_from:
            msg = (
                f"{pipeline}: expected {expect_from} to be live but {current} is; "
                "someone else switched it first"
            )
            raise LiveSwitchConflictError(msg)
        return _record(home, pipeline, current, to_version, reason, comparison, actor)


def _record(
    home: Home,
    pipeline: str,
    current: str | None,
    to_version: str,
    reason: str,
    comparison: dict[str, Any] | None,
    actor: str,
) -> Switch:
    """Write the pointer, then append the switch to the history (caller holds the lock)."""
    record = Switch(pipeline, current, to_version, reason, comparison=comparison, actor=actor)
    write_atomically(
        pointer_path(home, pipeline), json.dumps({"version": to_version, "since": record.at})
    )
    with open(history_path(home, pipeline), "a") as log:
        log.write(json.dumps(asdict(record), default=str) + "\n")
        log.flush()
        os.fsync(log.fileno())
    return record


def claim_first(home: Home, pipeline: str, version: str, reason: str) -> Switch | None:
    """Make ``version`` live only if the pipeline has no live version yet (its first deployment).

    Returns the switch, or None when a version is already live.
    """
    with pointer_held(home, validate_pipeline_name(pipeline)):
        if live_version(home, pipeline) is not None:
            return None
        return _record(home, pipeline, None, validate_version(version), reason, None, "kappa")
