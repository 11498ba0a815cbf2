"""Which replaced versions have outlived the rollback window and are to be retired."""

from __future__ import annotations

from streaming.settings import Settings
from streaming.versions.state import Role, VersionState, pipeline_versions


def expired_versions(
    settings: Settings, pipeline: str, now: float | None = None
) -> list[VersionState]:
    """Deployed versions whose role is retired: live once, replaced longer ago than
    ``versions.retention_hours``. Versions that were never live (candidates, failed
    comparisons) are left to the user."""
    versions = pipeline_versions(settings, pipeline, now)
    return [s for s in versions.deployed(settings.home) if s.role == Role.RETIRED]
