"""A version's role, derived in one place from the live pointer and its switch history.

- **live**: the version readers see now;
- **candidate**: never live yet; it runs side by side to be compared and promoted;
- **retained**: was live and was replaced less than ``versions.retention_hours`` ago, so a
  rollback to it is instant;
- **retired**: was live and was replaced longer ago than that; the ``retire_expired_versions``
  schedule stops it and deletes its state.

The running deployment (what it reports), the versions overview, the sensors' decisions and
retention all ask :class:`PipelineVersions`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from enum import StrEnum

from streaming.home import Home
from streaming.settings import Settings
from streaming.versions.comparable import deployed_versions
from streaming.versions.live_pointer import Switch, history, live_version


class Role(StrEnum):
    LIVE = "live"
    CANDIDATE = "candidate"
    RETAINED = "retained"
    RETIRED = "retired"


@dataclass(frozen=True)
class VersionState:
    """One version of a pipeline, and its role."""

    version: str
    role: Role
    replaced_at: float | None = None  # when it last stopped being live

    def age_hours(self, now: float) -> float | None:
        """Hours since it was replaced (None for a version that was never replaced)."""
        return None if self.replaced_at is None else (now - self.replaced_at) / 3600


@dataclass(frozen=True)
class PipelineVersions:
    """A pipeline's live version and switch history, read once, and the roles they give."""

    pipeline: str
    live: str | None
    switches: tuple[Switch, ...]
    retention_s: float
    now: float

    def state(self, version: str) -> VersionState:
        if version == self.live:
            return VersionState(version, Role.LIVE)
        left = [s.at for s in self.switches if s.from_version == version]
        if not left:
            return VersionState(version, Role.CANDIDATE)
        kept = self.now - left[-1] < self.retention_s
        return VersionState(version, Role.RETAINED if kept else Role.RETIRED, left[-1])

    def role(self, version: str) -> Role:
        return self.state(version).role

    def deployed(self, home: Home) -> list[VersionState]:
        """The versions that have state under the platform home, with their roles."""
        return [self.state(v) for v in deployed_versions(home, self.pipeline)]


def pipeline_versions(
    settings: Settings, pipeline: str, now: float | None = None
) -> PipelineVersions:
    """The pipeline's versions as its live pointer and history say now (or at ``now``)."""
    home = settings.home
    return PipelineVersions(
        pipeline=pipeline,
        live=live_version(home, pipeline),
        switches=tuple(history(home, pipeline)),
        retention_s=settings.versions.retention_hours * 3600,
        now=time.time() if now is None else now,
    )
