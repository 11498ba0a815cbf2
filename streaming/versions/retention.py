"""Which replaced versions have outlived the rollback window and may be retired."""

from __future__ import annotations

import time
from dataclasses import dataclass

from streaming.settings import Settings
from streaming.versions.comparable import deployed_versions
from streaming.versions.live_pointer import history, live_version


@dataclass(frozen=True)
class Expired:
    pipeline: str
    version: str
    replaced_at: float  # when it last stopped being live

    def age_hours(self, now: float) -> float:
        return (now - self.replaced_at) / 3600


def expired_versions(settings: Settings, pipeline: str, now: float | None = None) -> list[Expired]:
    """Non-live versions that were live once and were replaced longer ago than the retention.

    Versions that were never live (candidates, failed comparisons) are left to the user.
    """
    now = time.time() if now is None else now
    keep_s = settings.versions.retention_hours * 3600
    live = live_version(settings.home, pipeline)
    switches = history(settings.home, pipeline)
    expired = []
    for version in deployed_versions(settings.home, pipeline):
        if version == live:
            continue
        left = [s.at for s in switches if s.from_version == version]
        if left and now - left[-1] >= keep_s:
            expired.append(Expired(pipeline, version, left[-1]))
    return expired
