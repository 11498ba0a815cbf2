"""Versions of a pipeline side by side: which are deployed, and where two of them can be compared
exactly (a commit of each at the same input offsets)."""

from __future__ import annotations

from dataclasses import dataclass

from streaming.define.names import validate_pipeline_name
from streaming.delta.table_reader import commits
from streaming.deployment import Deployment, deployments_on_disk
from streaming.home import Home
from streaming.kafka import offsets as off


@dataclass(frozen=True)
class ComparablePair:
    """Two table versions that reflect exactly the same input offsets."""

    offsets: off.OffsetMap
    live_table_version: int
    candidate_table_version: int


def deployed_versions(home: Home, pipeline: str) -> list[str]:
    """The versions of ``pipeline`` that have a table."""
    validate_pipeline_name(pipeline)
    on_disk = deployments_on_disk(home, pipeline)
    return sorted(d.version for d in on_disk if d.table_path.exists())


def comparable_pair(live: Deployment, candidate: Deployment) -> ComparablePair | None:
    """The latest input position both tables have a commit for, with each commit's version."""
    live_commits = {off.dumps(c.end_offsets): c for c in commits(live.table_path)}
    for commit in reversed(commits(candidate.table_path)):
        match = live_commits.get(off.dumps(commit.end_offsets))
        if match is not None:
            return ComparablePair(commit.end_offsets, match.table_version, commit.table_version)
    return None
