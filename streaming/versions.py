"""Versions of a pipeline side by side: what is deployed, where two versions can be compared
exactly, whether the log still holds its beginning, and retiring a version's state."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from streaming import offsets as off
from streaming.deployment import Deployment, validate_pipeline_name
from streaming.errors import StreamingError
from streaming.kafka_log import KafkaLog
from streaming.live import live_version
from streaming.lock import DeploymentBusyError, DeploymentLock
from streaming.table_reader import commits


class HistoryGoneError(StreamingError):
    """The log no longer starts at offset 0: a replay from the beginning would miss records."""


class RetireRefusedError(StreamingError):
    """The version is live, or still running."""


@dataclass(frozen=True)
class ComparablePair:
    """Two table versions that reflect exactly the same input offsets."""

    offsets: off.OffsetMap
    live_table_version: int
    candidate_table_version: int


def deployed_versions(home: Path, pipeline: str) -> list[str]:
    validate_pipeline_name(pipeline)
    tables = home / "tables"
    prefix = f"{pipeline}__"
    if not tables.is_dir():
        return []
    return sorted(p.name[len(prefix) :] for p in tables.iterdir() if p.name.startswith(prefix))


def comparable_pair(live: Deployment, candidate: Deployment) -> ComparablePair | None:
    """The latest input position both tables have a commit for, with each commit's version."""
    live_commits = {off.dumps(c.end_offsets): c for c in commits(live.table_path)}
    for commit in reversed(commits(candidate.table_path)):
        match = live_commits.get(off.dumps(commit.end_offsets))
        if match is not None:
            return ComparablePair(commit.end_offsets, match.table_version, commit.table_version)
    return None


def check_log_has_beginning(client: dict[str, str], topics: tuple[str, ...]) -> None:
    """Refuse a replay from the earliest offsets when retention has removed the beginning.

    Raises:
        HistoryGoneError: naming each topic partition and how many records are gone.
    """
    with KafkaLog(client) as log:
        earliest = log.earliest(topics)
    gone = {f"{t}-{p}": o for t, parts in earliest.items() for p, o in parts.items() if o > 0}
    if gone:
        total = sum(gone.values())
        listing = ", ".join(f"{tp} (first offset {o})" for tp, o in sorted(gone.items()))
        msg = (
            f"the log no longer holds its beginning: {total} records are gone from {listing}; "
            "a rebuild from the earliest offsets would not equal the live table. Pass --force to "
            "replay anyway, or give explicit --starting-offsets"
        )
        raise HistoryGoneError(msg)


def refuse_if_live(deployment: Deployment) -> None:
    if live_version(deployment.home, deployment.pipeline) == deployment.version:
        msg = f"{deployment.id} is live; promote another version before retiring it"
        raise RetireRefusedError(msg)


def retire(deployment: Deployment) -> list[Path]:
    """Delete a non-live, stopped deployment's table, checkpoint and dead letters."""
    refuse_if_live(deployment)
    lock = DeploymentLock(deployment.lock_path)
    holder = lock.holder()
    if holder is not None:
        msg = f"{deployment.id} is running (pid {holder.get('pid')}); stop it first"
        raise DeploymentBusyError(msg)
    removed = []
    for path in (
        deployment.table_path,
        deployment.checkpoint_path,
        deployment.dead_letter_path,
        deployment.lock_path,
    ):
        if path.is_dir():
            shutil.rmtree(path)
            removed.append(path)
        elif path.exists():
            path.unlink()
            removed.append(path)
    return removed
